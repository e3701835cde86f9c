/**
 * `servicectl engine build llama.cpp` and the service's background build run this: node-llama-cpp's `source
 * download`, which clones the llama.cpp release node-llama-cpp bundles (no network) and compiles it, with the
 * portable build's CMake options (portable-build.ts). CPU only, so that a GPU machine keeps loading the prebuilt
 * CUDA or Vulkan binaries, which node-llama-cpp prefers to a CPU build whenever a GPU is there.
 */
import {spawn} from 'node:child_process'
import {constants} from 'node:os'
import {fileURLToPath} from 'node:url'

import {cmakeOptionsEnvironment, portableCmakeOptions} from './portable-build.js'

const NODE_LLAMA_CPP_CLI = fileURLToPath(new URL('cli/cli.js', import.meta.resolve('node-llama-cpp')))

const build = spawn(process.execPath, [NODE_LLAMA_CPP_CLI, 'source', 'download', '--gpu', 'false', '--noUsageExample'], {
  env: {...process.env, ...cmakeOptionsEnvironment(portableCmakeOptions())},
  stdio: 'inherit',
})
// A build stopped from outside stops the compile with it, not only this wrapper.
for (const signal of ['SIGHUP', 'SIGINT', 'SIGTERM'] as const) process.on(signal, () => build.kill(signal))
build.once('close', (code, signal) => process.exit(code ?? 128 + (signal ? constants.signals[signal] : 0)))
