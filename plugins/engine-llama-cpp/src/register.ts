import type {RegisterHook} from 'service-toolkit'

import {fileURLToPath} from 'node:url'

import {NODE_LLAMA_CPP_BUILD_FOLDER} from './build-in-progress.js'
import {generateRecipe, RECIPE_NAMES} from './gguf/recipes.js'

const BUILD_PORTABLE = fileURLToPath(new URL('build-portable.js', import.meta.url))
const BUILD_REPORT = fileURLToPath(new URL('build-report.js', import.meta.url))

/**
 * The engine is data: the kernel spawns `host.js` in a child process per launched model. The weights generator makes
 * the catalogue's random-weight GGUF models in the service's own process, which takes milliseconds.
 */
const register: RegisterHook = async () => ({
  engines: [
    {
      build: {
        // The service builds by itself, in the background, on a machine that can and still loads the prebuilt CPU
        // binaries (the probe asks node-llama-cpp as a launch would; see auto-build-verdict.ts).
        auto: {folder: NODE_LLAMA_CPP_BUILD_FOLDER, probeCommand: [process.execPath, BUILD_REPORT, '--probe']},
        // The portable build (portable-build.ts), CPU only: see build-portable.ts.
        command: [process.execPath, BUILD_PORTABLE],
        description:
          'Compiles llama.cpp from the source bundled with node-llama-cpp, with OpenMP and one CPU backend per instruction-set level (the best one loaded at start, so the build is right for any machine it is copied to); it generates faster than the prebuilt binaries. Offline, about 25 minutes on 2 cores.',
        reportCommand: [process.execPath, BUILD_REPORT],
        requires: [
          {aptPackage: 'cmake', name: 'cmake', programs: ['cmake']},
          {aptPackage: 'g++', name: 'a C++ compiler', programs: ['c++', 'g++', 'clang++']},
          {aptPackage: 'gcc', name: 'a C compiler', programs: ['cc', 'gcc', 'clang']},
          {aptPackage: 'make', name: 'a build tool', programs: ['make', 'ninja']},
          // The bundled source is a git bundle, cloned with git.
          {aptPackage: 'git', name: 'git', programs: ['git']},
          // node-llama-cpp runs its CMake wrapper through an npm script.
          {aptPackage: 'npm', name: 'npm', programs: ['npm']},
        ],
      },
      estimatorModule: fileURLToPath(new URL('estimate.js', import.meta.url)),
      formats: ['ggufv2'],
      hostModule: fileURLToPath(new URL('host.js', import.meta.url)),
      // Each decode runs on a libuv pool thread. With Node's default of four pool threads, two compute threads
      // decoded far slower than with one pool thread (137M-parameter model, 2 cores, measured back to back:
      // 39–45 tok/s against 64–66), most likely because decodes and samplings move between pool threads and
      // llama.cpp's compute threads with them; one pool thread keeps that path on one thread.
      processEnvironment: {UV_THREADPOOL_SIZE: '1'},
      modelTypes: ['LLM', 'embedding', 'rerank'],
      name: 'llama.cpp',
      parameters: {
        enable_thinking: {description: "Whether a hybrid reasoning model (Qwen3) thinks when a chat request does not say (Xinference's launch option; default: the model's).", type: 'boolean'},
        flash_attn: {description: 'Use flash attention (default: where llama.cpp supports it).', type: 'boolean'},
        n_batch: {description: 'Tokens evaluated per batch during prompt processing.', minimum: 1, type: 'integer'},
        n_ctx: {description: 'Context length available to each request, in tokens (default: the smaller of the model\'s and 4096; embedding and rerank models: the model\'s).', minimum: 16, type: 'integer'},
        n_gpu_layers: {description: 'Layers to offload to the GPU; -1 for all (default: as many as fit).', minimum: -1, type: 'integer'},
        n_parallel: {description: 'Requests served at once, batched together (default 4); embedding and rerank models: inputs evaluated side by side, one context each (default 1).', maximum: 256, minimum: 1, type: 'integer'},
        n_threads: {description: 'CPU threads for inference (default: the cores llama.cpp computes on; with the prebuilt binaries, 1 below 64 MiB of weights).', minimum: 1, type: 'integer'},
        reasoning_format: {
          description: "How the model's output carries its reasoning, split into reasoning_content: think (<think> tags, or the family's reasoning_start_tag and reasoning_end_tag), harmony (gpt-oss's channels) or none (default: the family's, by its reasoning ability).",
          enum: ['think', 'harmony', 'none'],
          type: 'string',
        },
        use_mmap: {description: 'Memory-map the model file (default: automatic).', type: 'boolean'},
      },
    },
  ],
  weightsGenerators: [{format: 'ggufv2', generate: generateRecipe, recipes: RECIPE_NAMES}],
})

export default register
