/**
 * Whether the service's background build of llama.cpp would help the models launched now, from what node-llama-cpp
 * loads for a launch with default parameters (build-report.ts asks it): only a machine on the prebuilt CPU binaries
 * gains from the build, which is CPU only; a local build is already there, and a GPU keeps its prebuilt GPU binaries.
 */
import type {LlamaGpuType} from 'node-llama-cpp'

export interface AutoBuildVerdict {
  wanted: boolean
  reason: string
}

/**
 * Which binaries a Llama was loaded from, as the model's log and `servicectl engine build` say it, with the CPU
 * variant ggml picked for this CPU where it is known (portable-build.ts).
 */
export const describeBinaries = (buildType: 'localBuild' | 'prebuilt', gpu: LlamaGpuType, cpuVariant?: string): string =>
  `${buildType === 'localBuild' ? 'the local build of llama.cpp' : "node-llama-cpp's prebuilt llama.cpp binaries"} (${gpu === false ? 'CPU' : `GPU: ${gpu}`}${cpuVariant ? `; CPU variant: ${cpuVariant}` : ''})`

export function autoBuildVerdict(buildType: 'localBuild' | 'prebuilt', gpu: LlamaGpuType): AutoBuildVerdict {
  if (buildType === 'localBuild') return {reason: 'models launched now already use the local build of llama.cpp.', wanted: false}
  if (gpu !== false) return {reason: `models launched now run on the GPU (${gpu}) with node-llama-cpp's prebuilt binaries, which a CPU build would not speed up.`, wanted: false}
  return {reason: "models launched now would load node-llama-cpp's prebuilt CPU binaries, which generate slower than a build for this CPU", wanted: true}
}
