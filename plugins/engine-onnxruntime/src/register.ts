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
      },
    },
  ],
})

export default register
