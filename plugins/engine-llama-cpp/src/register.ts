import type {RegisterHook} from 'service-toolkit'

import {fileURLToPath} from 'node:url'

/** Data only: the kernel spawns `host.js` in a child process per launched model. */
const register: RegisterHook = async () => ({
  engines: [
    {
      estimatorModule: fileURLToPath(new URL('estimate.js', import.meta.url)),
      formats: ['ggufv2'],
      hostModule: fileURLToPath(new URL('host.js', import.meta.url)),
      // Each decode runs on a libuv pool thread, and llama.cpp's compute threads are kept per calling thread: with
      // Node's four pool threads, their idle compute threads compete with the working ones. One pool thread
      // made two compute threads pay off (137M-parameter model, 2 cores: 86 tok/s against 39 with four).
      processEnvironment: {UV_THREADPOOL_SIZE: '1'},
      modelTypes: ['LLM', 'embedding', 'rerank'],
      name: 'llama.cpp',
      parameters: {
        flash_attn: {description: 'Use flash attention (default: where llama.cpp supports it).', type: 'boolean'},
        n_batch: {description: 'Tokens evaluated per batch during prompt processing.', minimum: 1, type: 'integer'},
        n_ctx: {description: 'Context length available to each request, in tokens (default: the smaller of the model\'s and 4096; embedding and rerank models: the model\'s).', minimum: 16, type: 'integer'},
        n_gpu_layers: {description: 'Layers to offload to the GPU; -1 for all (default: as many as fit).', minimum: -1, type: 'integer'},
        n_parallel: {description: 'Requests served at once, batched together (default 4); embedding and rerank models: inputs evaluated side by side, one context each (default 1).', maximum: 256, minimum: 1, type: 'integer'},
        n_threads: {description: 'CPU threads for inference (default: the cores llama.cpp computes on; 1 below 64 MiB of weights).', minimum: 1, type: 'integer'},
        use_mmap: {description: 'Memory-map the model file (default: automatic).', type: 'boolean'},
      },
    },
  ],
})

export default register
