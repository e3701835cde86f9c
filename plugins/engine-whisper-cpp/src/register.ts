import type {RegisterHook} from 'service-toolkit'

import {fileURLToPath} from 'node:url'

import {generateRecipe, RECIPE_NAMES} from './ggml/recipes.js'

/**
 * The engine is data: the kernel spawns `host.js` in a child process per launched model. The weights generator writes
 * the catalogue's `tiny-random-whisper` in the service's own process (15 MB, well under a second).
 */
const register: RegisterHook = async () => ({
  engines: [
    {
      formats: ['ggml'],
      hostModule: fileURLToPath(new URL('host.js', import.meta.url)),
      modelTypes: ['audio'],
      name: 'whisper.cpp',
      parameters: {
        flash_attn: {description: 'Use flash attention (default: whisper.cpp\'s choice).', type: 'boolean'},
        n_parallel: {description: 'Transcriptions run at once, each with a whisper.cpp context of its own (default 1; each holds its own copy of the weights).', maximum: 64, minimum: 1, type: 'integer'},
        n_threads: {description: 'CPU threads per transcription (default: the cores divided by n_parallel).', minimum: 1, type: 'integer'},
        use_gpu: {description: 'Run on the GPU when the binaries found one (CUDA, Vulkan); default true.', type: 'boolean'},
      },
    },
  ],
  weightsGenerators: [{format: 'ggml', generate: generateRecipe, recipes: RECIPE_NAMES}],
})

export default register
