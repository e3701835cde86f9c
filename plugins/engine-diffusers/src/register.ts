import type {RegisterHook} from 'service-toolkit'

import {writeFile} from 'node:fs/promises'
import {fileURLToPath} from 'node:url'

import {diffusersOperations} from './operations.js'

const SERVER = fileURLToPath(new URL('../python/server.py', import.meta.url))
const RECIPES = ['tiny-random-image', 'tiny-random-video']

/**
 * Each model runs `python/server.py` in a virtual environment with diffusers (the kernel makes it once and reuses it):
 * a pipeline folder, or one of the tiny random pipelines the weights generator names in a file. Versions are those the
 * tests run; torch 2.13.0 resolves to the CPU build on machines that have it, the CUDA one elsewhere.
 */
const register: RegisterHook = async ({api}) => ({
  engines: [
    {
      external: {
        command(request, {port, python}) {
          const {family, modelName, modelPath, modelType, parameters} = request
          if (family.model_ability?.includes('ocr'))
            throw api.errors.badRequest(`${modelName} is an OCR model; the diffusers engine runs diffusion pipelines (text2image, image2image, inpainting, video), not OCR.`, 'model_engine')
          const load = JSON.stringify({family, modelName, modelPath, modelType, parameters})
          return {args: ['-u', SERVER, '--port', String(port), '--request', load], file: python!.executable}
        },
        // A large pipeline loads from disk to GPU in minutes.
        health: {path: '/health', timeoutMs: 15 * 60 * 1000},
        info: (request) => ({abilities: (request.family.model_ability as string[] | undefined) ?? (request.modelType === 'video' ? ['text2video'] : ['text2image'])}),
        operations: diffusersOperations(api.external.jsonLines('diffusers')),
        stopGraceMs: 5000,
      },
      formats: ['diffusers'],
      modelTypes: ['image', 'video'],
      name: 'diffusers',
      parameters: {
        cpu_threads: {description: 'Threads torch computes with on the CPU (default: one per core).', minimum: 1, type: 'integer'},
      },
      // accelerate: without it diffusers loads a T5 text encoder (FLUX, SD 3.5, CogVideoX, Wan) with low_cpu_mem_usage=False, which transformers refuses.
      python: {packages: ['torch==2.13.0', 'diffusers==0.42.1', 'transformers==5.24.0', 'tokenizers==0.23.3', 'accelerate==1.15.0', 'pillow', 'imageio', 'imageio-ffmpeg']},
    },
  ],
  // The tiny pipelines are built from code with a fixed seed when loaded; their file names the recipe.
  weightsGenerators: [{format: 'diffusers', generate: ({files, recipe}) => writeFile(files[0], JSON.stringify({recipe, seed: 0}) + '\n'), recipes: RECIPES}],
})

export default register
