/**
 * Which GPUs of a worker a launch gets, as Xinference's launch fields ask: `n_gpu` (a number of GPUs, or `auto`
 * for every free one) or `gpu_idx` (exactly these indices). A GPU given to a model is that model's alone until it
 * is terminated; a launch that names neither gets no GPUs of its own and its process sees every GPU, as before
 * (llama.cpp then offloads as `n_gpu_layers` says, sharing them). Pure functions: the worker's GPUs and the ones
 * already given out are passed in.
 */
import type {GpuDevice} from '../protocol/worker.js'
import type {PlacementCandidate} from './placement.js'

import {badRequest, ServiceError} from '../kernel/errors.js'

export interface GpuRequest {
  n_gpu?: 'auto' | number | null
  gpu_idx?: number | number[] | null
}

const plural = (count: number, what: string) => `${count} ${what}${count === 1 ? '' : 's'}`
const listed = (indices: number[]) => indices.join(', ') || 'none'

/**
 * The GPU indices to give a launch on a worker with `gpus`, of which `taken` (index → model uid) are given to
 * other models; undefined when the launch asks for none. Refuses, naming the field, a request the worker can never
 * meet (400) or cannot meet now because other models hold the GPUs (503).
 */
export function assignGpus(request: GpuRequest, gpus: GpuDevice[], taken: ReadonlyMap<number, string>, worker: string): number[] | undefined {
  const all = gpus.map((gpu) => gpu.index)
  const free = all.filter((index) => !taken.has(index))
  const holders = (indices: number[]) => indices.map((index) => `GPU ${index} runs ${taken.get(index)}`).join('; ')
  const gpuIdx = request.gpu_idx === null || request.gpu_idx === undefined ? undefined : [request.gpu_idx].flat()
  if (gpuIdx) {
    const unknown = gpuIdx.filter((index) => !all.includes(index))
    if (unknown.length > 0) throw badRequest(`gpu_idx names GPU ${listed(unknown)}, which worker ${worker} does not have; its GPUs: ${listed(all)}.`, 'gpu_idx')
    if (typeof request.n_gpu === 'number' && request.n_gpu !== gpuIdx.length)
      throw badRequest(`n_gpu ${request.n_gpu} and gpu_idx (${plural(gpuIdx.length, 'GPU')}) disagree; give one of them.`, 'n_gpu')
    const busy = gpuIdx.filter((index) => taken.has(index))
    if (busy.length > 0) throw new ServiceError(503, 'overloaded', `gpu_idx asks for GPUs in use on worker ${worker}: ${holders(busy)}. Terminate that model first.`, 'gpu_idx')
    return [...new Set(gpuIdx)]
  }

  if (request.n_gpu === null || request.n_gpu === undefined) return undefined
  if (request.n_gpu === 'auto') {
    // Like Xinference: every free GPU; a machine without GPUs runs the model on its CPU.
    if (all.length > 0 && free.length === 0) throw new ServiceError(503, 'overloaded', `every GPU of worker ${worker} is in use: ${holders(all)}.`, 'n_gpu')
    return all.length > 0 ? free : undefined
  }

  if (request.n_gpu > all.length) throw badRequest(`n_gpu ${request.n_gpu} asks for more GPUs than worker ${worker} has (${plural(all.length, 'GPU')}).`, 'n_gpu')
  if (request.n_gpu > free.length)
    throw new ServiceError(503, 'overloaded', `n_gpu ${request.n_gpu} asks for more GPUs than worker ${worker} has free (${free.length}): ${holders(all.filter((index) => taken.has(index)))}.`, 'n_gpu')
  return free.slice(0, request.n_gpu)
}

/** A worker's GPUs as placement sees them: what it has, and which are given to which model. */
export interface GpuHolder {
  id: string
  gpus: GpuDevice[]
  taken: ReadonlyMap<number, string>
}

const asks = (request: GpuRequest) => (request.n_gpu !== null && request.n_gpu !== undefined) || (request.gpu_idx !== null && request.gpu_idx !== undefined)

/** The candidates that can give the launch its GPUs; when none can, the first one's refusal says why. */
export function gpuCandidates<W>(request: GpuRequest, workers: W[], holder: (worker: W) => GpuHolder): W[] {
  if (!asks(request)) return workers
  const refusals: unknown[] = []
  const fit = workers.filter((worker) => {
    const {gpus, id, taken} = holder(worker)
    try {
      assignGpus(request, gpus, taken, id)
      return true
    } catch (error) {
      refusals.push(error)
      return false
    }
  })
  if (fit.length === 0 && refusals.length > 0) throw refusals[0]
  return fit
}

/** Each replica's GPUs, in order; replicas on one worker take theirs in turn, so none is given twice. */
export function assignReplicaGpus<W>(request: GpuRequest, chosen: W[], holder: (worker: W) => GpuHolder, uid: string): Array<number[] | undefined> {
  const given = new Map<W, Map<number, string>>()
  return chosen.map((worker) => {
    const {gpus, id, taken} = holder(worker)
    const held = given.get(worker) ?? new Map(taken)
    given.set(worker, held)
    const assigned = assignGpus(request, gpus, held, id)
    for (const index of assigned ?? []) held.set(index, uid)
    return assigned
  })
}

/** Model cards give GPU memory in decimal gigabytes: an "80 GB" H100 reports 81,559 MiB, under 80 GiB. */
const GB = 1e9

/**
 * The candidates with a GPU of at least `neededGb` gigabytes (a family's `min_gpu_memory_gb`: what its model needs
 * without offloading to the CPU), so that a model no worker can run is refused before its weights download; when
 * none has one, a 400 saying what each worker has.
 */
export function gpuMemoryCandidates<W>(neededGb: unknown, candidates: Array<PlacementCandidate<W>>, name: string): Array<PlacementCandidate<W>> {
  if (typeof neededGb !== 'number' || !(neededGb > 0)) return candidates
  const largest = ({status}: PlacementCandidate<W>) => status.resources.gpus.reduce<GpuDevice | undefined>((best, gpu) => (best && best.memory_total_bytes >= gpu.memory_total_bytes ? best : gpu), undefined)
  const fit = candidates.filter((candidate) => (largest(candidate)?.memory_total_bytes ?? 0) >= neededGb * GB)
  if (fit.length > 0) return fit
  const has = candidates.map((candidate) => {
    const gpu = largest(candidate)
    return gpu ? `the largest GPU of worker ${candidate.status.id}, ${gpu.name}, has ${Math.floor(gpu.memory_total_bytes / GB)} GB` : `worker ${candidate.status.id} has no CUDA GPU`
  })
  throw new ServiceError(400, 'unsupported', `${name} needs a GPU with ${neededGb} GB of memory (min_gpu_memory_gb); ${has.join('; ')}. Launch it on a worker with one.`, 'model_name')
}
