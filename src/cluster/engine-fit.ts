/**
 * Whether an engine can run a spec on the workers there are: on each worker's machine at all (a Python for an engine
 * that runs one, the engine's `availability`: platform, devices, Python version), then memory enough for the spec's
 * weights and the engine's own answer for the spec (`canRun`: device, what its kernels take). Pure functions of what the
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
  const {arch, gpus, memory_total_bytes: memoryTotalBytes, platform, python} = status.resources
  return {arch, gpus: gpus.map(({memory_total_bytes, name}) => ({memory_total_bytes, name})), id: status.id, memoryTotalBytes, platform, ...(python === undefined ? {} : {python})}
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

type MachineQuestions = Pick<EngineDefinition, 'availability' | 'name' | 'python'>

/** Whether the engine can run on a worker's machine at all: a Python to make its environment from, then its own answer. */
export function machineFit(engine: MachineQuestions, worker: WorkerFacts): Promise<true | string> | true | string {
  if (engine.python && worker.python === null)
    return `${engine.name} runs Python in a virtual environment, and no Python interpreter was found on the worker (SERVICE_PYTHON, else python3 on PATH). Install Python 3 with venv and pip there (Debian and Ubuntu: \`apt install python3 python3-venv python3-pip\`; macOS: \`brew install python\`), or point SERVICE_PYTHON at an interpreter.`
  return engine.availability?.(worker) ?? true
}

/** Whether the engine can run on each worker's machine at all, in the workers' order. */
export function machineFits(engine: MachineQuestions, workers: WorkerFacts[]): Promise<Array<true | string>> {
  return Promise.all(workers.map((worker) => machineFit(engine, worker)))
}

/** Whether the engine can run on any of the workers' machines; if none, why (see `reasonOf`). */
export function anyMachine(machines: Array<true | string>, workers: WorkerFacts[]): true | string {
  return machines.includes(true) ? true : reasonOf(machines as string[], workers)
}

/** One worker's reason as it is; with several, each worker's, named; none: that no worker answers. */
function reasonOf(reasons: string[], workers: WorkerFacts[]): string {
  if (reasons.length === 0) return 'no worker answers.'
  return reasons.map((reason, index) => (workers.length === 1 ? reason : `worker ${workers[index].id}: ${reason}`)).join(' ')
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

/**
 * Whether any of the workers can run the spec, each on a machine the engine runs on (`machines`, from `machineFits`;
 * all of them when not given); if none, why, worker by worker when there are several.
 */
export function fitOnWorkers(engine: Pick<EngineDefinition, 'canRun'>, request: FitRequest, workers: WorkerFacts[], machines: Array<true | string> = workers.map(() => true)): true | string {
  const answers = workers.map((worker, index) => (machines[index] === true ? fitOnWorker(engine, request, worker) : machines[index]))
  return answers.includes(true) ? true : reasonOf(answers as string[], workers)
}

/**
 * The candidates the engine can run the spec on, as `GET /v1/engines/{model}` tells; none is a 400 naming
 * `model_engine` with the table's reason, before anything is downloaded or installed. Placement is synchronous, so
 * an engine whose answer about a machine is a promise is left to the worker, which asks it again at launch.
 */
export function ableCandidates<W>(engine: EngineDefinition, request: FitRequest, candidates: Array<PlacementCandidate<W>>): Array<PlacementCandidate<W>> {
  const workers = candidates.map(({status}) => workerFacts(status))
  const machines = workers.map((worker) => {
    const machine = machineFit(engine, worker)
    return typeof machine === 'string' ? machine : true
  })
  const able = candidates.filter((_, index) => fitOnWorkers(engine, request, [workers[index]], [machines[index]]) === true)
  if (able.length > 0) return able
  throw new ServiceError(400, 'unsupported', `${engine.name} cannot run ${request.modelName}'s ${request.spec.model_format} spec here: ${fitOnWorkers(engine, request, workers, machines)}`, 'model_engine')
}
