/**
 * Why vLLM failed to start, in the service's words. vLLM's server exits saying only "Engine core initialization
 * failed. See root cause above.": the cause is an exception its engine process wrote earlier. Each cause below is
 * recognised by what vLLM 0.32 writes for it and told as what to change; nothing of the program's output is quoted,
 * and a cause not listed leaves the launch's usual reason.
 */
const CAUSES: Array<[RegExp, string]> = [
  [/is less than desired CPU memory utilization/, "this machine has less memory available than vLLM's CPU build reserves at start (gpu_memory_utilization of all its memory); give --cpu_kvcache_space <GiB> or a smaller gpu_memory_utilization"],
  [/on kv cache allocation is less than requested memory for kv/, 'the KV cache asked for is larger than the memory left once the weights are loaded; give a smaller cpu_kvcache_space (or gpu_memory_utilization)'],
  [/less than desired GPU memory utilization/, "the GPU has less memory free than gpu_memory_utilization asks for; give a smaller gpu_memory_utilization, or free the GPU's memory"],
  [/User-specified max_model_len \(\d+\) is greater than the derived max_model_len/, "max_model_len is larger than the context length the model's config.json allows; give a smaller max_model_len"],
  [/head_size not supported|Head size \d+ is not supported/i, "vLLM's attention kernels do not take the model's head size; use the transformers engine"],
  [/CUDA out of memory|OutOfMemoryError/, "the model and its KV cache do not fit in the GPU's memory; give a smaller max_model_len or gpu_memory_utilization, or more GPUs (tensor_parallel_size)"],
  [/No module named /, 'a Python module it needs is missing from its environment; check the registration\'s virtualenv packages'],
]

/** The recognised cause in vLLM's output, the earliest when several are there; undefined when none is. */
export function vllmStartFailure(output: string): string | undefined {
  const found = CAUSES.map(([pattern, reason]) => ({at: output.search(pattern), reason})).filter(({at}) => at >= 0)
  if (found.length === 0) return undefined
  const {reason} = found.reduce((first, next) => (next.at < first.at ? next : first))
  return `vLLM's engine failed to start: ${reason}`
}
