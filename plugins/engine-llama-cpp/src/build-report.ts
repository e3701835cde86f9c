/**
 * Says which llama.cpp binaries a model launched now would load. `servicectl engine build llama.cpp` runs it
 * after a build, so the person sees whether the local build took effect; it asks node-llama-cpp exactly as
 * host.ts does for a launch with default parameters.
 */
import {getLlama, type LlamaGpuType} from 'node-llama-cpp'

const llama = await getLlama({build: 'never', gpu: 'auto'})
const binaries = llama.buildType === 'localBuild' ? 'the local build of llama.cpp' : "node-llama-cpp's prebuilt llama.cpp binaries"
const device = (gpu: LlamaGpuType) => (gpu === false ? 'CPU' : `GPU: ${gpu}`)
const cpuNote = llama.gpu === false ? '' : '; launch with --n_gpu_layers 0 to run on the CPU, which uses the local build'
console.log(`Models launched now use ${binaries} (${device(llama.gpu)})${cpuNote}.`)
await llama.dispose()
