/**
 * The one build of llama.cpp this engine makes, wherever it is made (`servicectl engine build llama.cpp`, the
 * service's background build, the container image's build stage): portable, as llama.cpp's own release builds and
 * node-llama-cpp's prebuilt binaries are. ggml compiles its CPU backend once per instruction-set level
 * (libggml-cpu-sse42.so, -haswell.so, -zen4.so, …) and loads the best one the CPU supports at start, so a build made
 * once is right for every machine it is copied to. Unlike the prebuilt binaries it keeps OpenMP, whose thread pool
 * hands work to the compute threads faster than ggml's own (host.ts), which is what a local build gains.
 *
 * node-llama-cpp keeps a build made with custom CMake options in a folder named after them and finds it only when
 * asked with the same options, so the build and every lookup of it (host.ts, build-report.ts) take them from here.
 */
import {readFile} from 'node:fs/promises'

export type CmakeOptions = Record<string, string>

/**
 * The CMake options of the portable build. ggml builds every CPU variant only where its CMakeLists lists them (x86
 * everywhere, ARM on Linux and macOS); elsewhere the build stays node-llama-cpp's default, for the machine's own CPU.
 */
export function portableCmakeOptions(platform: string = process.platform, arch: string = process.arch): CmakeOptions {
  const variants = arch === 'x64' || (arch === 'arm64' && (platform === 'linux' || platform === 'darwin'))
  return variants ? {GGML_BACKEND_DL: 'ON', GGML_CPU_ALL_VARIANTS: 'ON', GGML_NATIVE: 'OFF', GGML_OPENMP: 'ON'} : {}
}

/** The environment that hands CMake options to node-llama-cpp's `source download` (its NODE_LLAMA_CPP_CMAKE_OPTION_ prefix). */
export const cmakeOptionsEnvironment = (options: CmakeOptions): Record<string, string> =>
  Object.fromEntries(Object.entries(options).map(([name, value]) => [`NODE_LLAMA_CPP_CMAKE_OPTION_${name}`, value]))

/** getLlama's options that find the portable build among the local builds (the prebuilt binaries stay its fallback). */
export const FIND_PORTABLE_BUILD = {cmakeOptions: portableCmakeOptions()}

/** The CPU variant ggml loaded (`haswell` for libggml-cpu-haswell.so), read from a process's memory map. */
export function cpuVariantIn(memoryMap: string): string | undefined {
  return /libggml-cpu-([\w.-]+?)\.so/.exec(memoryMap)?.[1]
}

/** The CPU variant this process loaded, where the system shows its memory map (Linux); undefined elsewhere or before a load. */
export const loadedCpuVariant = async (): Promise<string | undefined> => cpuVariantIn(await readFile('/proc/self/maps', 'utf8').catch(() => ''))
