/**
 * Says which llama.cpp binaries a model launched now would load. `servicectl engine build llama.cpp` runs it
 * after a build, so the person sees whether the local build took effect; it asks node-llama-cpp exactly as
 * host.ts does for a launch with default parameters, and names the CPU variant it loaded. With `--probe` it prints, as one JSON line, whether the
 * service's background build would help (auto-build-verdict.ts).
 */
import {getLlama} from 'node-llama-cpp'

import {autoBuildVerdict, describeBinaries} from './auto-build-verdict.js'
import {gpuOption} from './gpu-option.js'
import {FIND_PORTABLE_BUILD, loadedCpuVariant} from './portable-build.js'

const llama = await getLlama({...FIND_PORTABLE_BUILD, build: 'never', gpu: await gpuOption(undefined)})
if (process.argv.includes('--probe')) console.log(JSON.stringify(autoBuildVerdict(llama.buildType, llama.gpu)))
else {
  const cpuNote = llama.gpu === false ? '' : '; launch with --n_gpu_layers 0 to run on the CPU, which uses the local build'
  console.log(`Models launched now use ${describeBinaries(llama.buildType, llama.gpu, await loadedCpuVariant())}${cpuNote}.`)
}

await llama.dispose()
