/**
 * Which binaries a launch asks node-llama-cpp for. With `gpu: 'auto'` it tests the binaries of each GPU kind whose
 * libraries it finds (CUDA, Vulkan) in a child process of its own before it settles on the CPU ones: on a Linux
 * server with a Vulkan loader installed and no GPU, every launch spent 0.3 s and 0.33 s of CPU on a test that cannot
 * pass. A GPU that CUDA or Vulkan can use is a device node on Linux (`/dev/nvidia0`, `/dev/dri/renderD128`, and
 * `/dev/dxg` under WSL); where there is none, the CPU binaries load without that test. Other systems keep `auto`.
 */
import {readdir} from 'node:fs/promises'

/** The names in a folder, none when it does not exist. */
export type ListFolder = (path: string) => Promise<string[]>

const listFolder: ListFolder = (path) => readdir(path).catch(() => [])

/** Whether Linux shows a device node a GPU backend could use. */
export async function linuxHasGpuDevice(list: ListFolder = listFolder): Promise<boolean> {
  const [devices, dri] = await Promise.all([list('/dev'), list('/dev/dri')])
  return devices.some((name) => /^nvidia\d+$/.test(name) || name === 'dxg') || dri.some((name) => name.startsWith('renderD'))
}

/** `false` (CPU binaries) when the launch asks for no GPU layers or a Linux machine has no GPU device; else `auto`. */
export async function gpuOption(gpuLayers: number | undefined, platform: NodeJS.Platform = process.platform, list: ListFolder = listFolder): Promise<'auto' | false> {
  if (gpuLayers === 0) return false
  if (platform === 'linux' && !(await linuxHasGpuDevice(list))) return false
  return 'auto'
}
