/**
 * Whether an engine can run a spec on the workers there are: the engine's own answer for each worker (`canRun`:
 * device, platform, what its kernels take), and memory enough for the spec's weights. Pure functions of what the
 * workers report, so `GET /v1/engines/{model}` and a launch give the same answer, and it is tested on its own.
 */
import type {ResolvedSpec} from '../kernel/catalogue.js'
import type {EngineDefinition, LoadRequest, WorkerFacts} from '../kernel/contracts.js'
import type {WorkerStatus} from '../protocol/worker.js'
import type {PlacementCandidate} from './placement.js'

import {NO_SIZE} from '../kernel/catalogue.js'
import {ServiceError} from '../kernel/errors.js'

const GIB = 1024 ** 3

/** The model and spec an engine is asked about. */
export type FitRequest = Pick<LoadRequest, 'modelName' | 'spec'>

/** What a worker's status says to the engines. */
export function workerFacts(status: Pick<WorkerStatus, 'id' | 'resources'>): WorkerFacts {
  const {arch, gpus, memory_total_bytes: memoryTotalBytes, platform} = status.resources
  return {arch, gpus: gpus.map(({memory_total_bytes, name}) => ({memory_total_bytes, name})), id: status.id, memoryTotalBytes, platform}
}

/**
 * Bytes per parameter of a quantization, from the bits its name gives (`q4_k_m`, `IQ2_XXS`, `Int4`, `4bit`, `fp8`): the first number in it;
 * 16-bit weights (`none`, `bf16`) otherwise, which is what an unquantized checkpoint holds.
 */
export function bytesPerParameter(quantization: string): number {
  const bits = /\d{1,2}/.exec(quantization)?.[0]
  const value = bits === undefined ? 16 : Number(bits)
  return (value >= 1 && value <= 32 ? value : 16) / 8
}

/** Bytes a spec's weights take, from its size and quantization; undefined for a spec that gives no size. */
export function weightsBytes(spec: Pick<ResolvedSpec, 'model_size_in_billions' | 'quantization'>): number | undefined {
  if (spec.model_size_in_billions === NO_SIZE) return undefined
  const billions = Number(spec.model_size_in_billions.replace('_', '.'))
  return Number.isFinite(billions) && billions > 0 ? billions * 1e9 * bytesPerParameter(spec.quantization) : undefined
}

/**
 * Whether one worker can run the spec with the engine: the weights must fit in its memory and its GPUs' together
 * (an engine may split them between both), then the engine decides. A reason if not.
 */
export function fitOnWorker(engine: Pick<EngineDefinition, 'canRun'>, request: FitRequest, worker: WorkerFacts): true | string {
  const {spec} = request
  const needed = weightsBytes(spec)
  const memory = worker.memoryTotalBytes + worker.gpus.reduce((sum, gpu) => sum + gpu.memory_total_bytes, 0)
  if (needed !== undefined && needed > memory)
    return `its ${spec.model_size_in_billions.replace('_', '.')}B ${spec.quantization === 'none' ? '' : `${spec.quantization} `}weights take about ${(needed / GIB).toFixed(1)} GiB, more than the ${(memory / GIB).toFixed(1)} GiB of memory ${worker.gpus.length > 0 ? 'and GPU memory ' : ''}the worker has; choose a smaller size or quantization.`
  return engine.canRun?.(request, worker) ?? true
}

/** Whether the engine can run on any of the workers' machines at all; if none, why, worker by worker when there are several. */
export async function engineOnWorkers(engine: Pick<EngineDefinition, 'availability'>, workers: WorkerFacts[]): Promise<true | string> {
  const answers = await Promise.all(workers.map(async (worker) => (await engine.availability?.(worker)) ?? true))
  if (answers.includes(true)) return true
  return answers.length === 0 ? 'no worker answers.' : answers.map((answer, index) => (workers.length === 1 ? answer : `worker ${workers[index].id}: ${answer}`)).join(' ')
}

/** Whether any of the workers can run the spec; if none, why, worker by worker when there are several. */
export function fitOnWorkers(engine: Pick<EngineDefinition, 'canRun'>, request: FitRequest, workers: WorkerFacts[]): true | string {
  const reasons: string[] = []
  for (const worker of workers) {
    const fit = fitOnWorker(engine, request, worker)
    if (fit === true) return true
    reasons.push(workers.length === 1 ? fit : `worker ${worker.id}: ${fit}`)
  }

  return reasons.length === 0 ? 'no worker answers.' : reasons.join(' ')
}

/**
 * The candidates whose machine the engine can run the spec on, as `GET /v1/engines/{model}` tells; none is a 400
 * naming `model_engine` with the table's reason, before anything is downloaded or installed.
 */
export function ableCandidates<W>(engine: EngineDefinition, request: FitRequest, candidates: Array<PlacementCandidate<W>>): Array<PlacementCandidate<W>> {
  const able = candidates.filter(({status}) => fitOnWorkers(engine, request, [workerFacts(status)]) === true)
  if (able.length > 0) return able
  const reason = fitOnWorkers(engine, request, candidates.map(({status}) => workerFacts(status)))
  throw new ServiceError(400, 'unsupported', `${engine.name} cannot run ${request.modelName}'s ${request.spec.model_format} spec here: ${reason}`, 'model_engine')
}
