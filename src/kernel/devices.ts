/**
 * How a model's process is limited to the GPUs it was given, for Node model processes and external programs alike.
 * It lives in the kernel because the cluster (which starts Node hosts) and the model processes (which start external
 * programs) both build it and neither may import the other.
 */

/**
 * The environment that limits a process to `gpus` (nvidia-smi indices). CUDA numbers devices fastest first unless
 * told to use PCI bus order, which is nvidia-smi's. None given leaves the variables as the service has them.
 */
export function gpuEnvironment(gpus: number[] | undefined): Record<string, string> {
  if (gpus === undefined) return {}
  return {CUDA_DEVICE_ORDER: 'PCI_BUS_ID', CUDA_VISIBLE_DEVICES: gpus.join(',')}
}
