import type {RegisterHook} from 'service-toolkit'

import {fileURLToPath} from 'node:url'

/** The engine is data: the kernel spawns `host.js` in a child process of its own for every launched model. */
const register: RegisterHook = async () => ({
  engines: [
    {
      formats: ['onnx'],
      hostModule: fileURLToPath(new URL('host.js', import.meta.url)),
      modelTypes: ['flexible'],
      name: 'onnxruntime',
      parameters: {
        intra_op_num_threads: {description: 'Threads one inference may use (default: ONNX Runtime\'s, one per core).', minimum: 1, type: 'integer'},
        max_batch_size: {
          description: 'Dynamic batching (as NVIDIA Triton names it): requests waiting together run as one, stacked along the first dimension, up to this many rows; every input and output must have a dynamic first dimension (default: off).',
          minimum: 1,
          type: 'integer',
        },
        max_queue_delay_microseconds: {
          description: 'With max_batch_size: how long the oldest waiting request may wait for others to fill its batch (default 0: batch only what is already waiting).',
          minimum: 0,
          type: 'integer',
        },
      },
    },
  ],
})

export default register
