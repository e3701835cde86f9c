/**
 * What the supervisor and a worker's server say to each other (`WorkerApi` on the network): the launch of an
 * instance, its summary, a worker's resources and status, and the frames of a worker's streams. The local worker
 * speaks the same types in process.
 */
import type {LoadedModelInfo, LoadRequest, MemoryEstimate} from '../kernel/contracts.js'
import type {ServiceErrorShape} from '../kernel/errors.js'

import * as s from '../kernel/schema.js'

export interface InstanceLaunch {
  engine: string
  load: Omit<LoadRequest, 'modelPath'>
  /** Set when the instance is one replica of a model launched with `replica > 1`; its own uid is `load.modelUid`. */
  replicaOf?: {modelUid: string; replica: number}
}

export const instanceLaunchSchema = s.object(
  {
    engine: s.string({minLength: 1}),
    load: s.record(s.unknown(), {description: 'The LoadRequest, without modelPath: the worker finds the weights itself.'}),
    replicaOf: s.optional(s.object({modelUid: s.string({minLength: 1}), replica: s.integer({minimum: 1})})),
  },
  {title: 'InstanceLaunch'},
)

export const instanceInvokeSchema = s.object({operation: s.string({minLength: 1}), payload: s.unknown()}, {title: 'InstanceInvoke'})

/** A model process's life: loading → ready, or crashed; disposing → disposed once asked to end. */
export type InstanceState = 'loading' | 'ready' | 'crashed' | 'disposing' | 'disposed'

export interface InstanceSummary {
  uid: string
  state: InstanceState
  pid?: number
  info: LoadedModelInfo
  error?: string
  /**
   * How the instance was launched. A worker keeps it for as long as the instance runs, so a supervisor that
   * restarts (or forgot the worker) can rebuild its table from what the worker reports.
   */
  launch?: InstanceLaunch
  /** How busy it is, as the worker last measured it (read by the metrics). */
  usage?: InstanceUsage
}

/** A process's resident memory and the CPU time it has used so far. */
export interface ProcessUsage {
  resident_memory_bytes: number
  cpu_seconds: number
}

/** An instance's engine sequences and requests waiting for one (when its engine reports them), and its process. */
export interface InstanceUsage {
  sequences_total?: number
  sequences_in_use?: number
  requests_waiting?: number
  process?: ProcessUsage
}

/** An instance's usage as the supervisor serves it in the metrics: which model it runs, on which worker. */
export interface ReportedInstance {
  model: string
  worker: string
  instance: string
  usage: InstanceUsage
}

/** A worker's downloads of weights so far, by hub and how they ended. */
export interface DownloadTally {
  hub: string
  outcome: 'completed' | 'failed' | 'cancelled'
  count: number
  bytes: number
}

/** A GPU of a worker (see cluster/devices.ts). */
export interface GpuDevice {
  /** nvidia-smi's index, in PCI bus order: what CUDA_VISIBLE_DEVICES names with CUDA_DEVICE_ORDER=PCI_BUS_ID. */
  index: number
  name: string
  uuid: string
  memory_total_bytes: number
  memory_free_bytes: number
}

/** What a worker has to offer, as it reports in registrations and heartbeats. */
export interface WorkerResources {
  cpu_count: number
  memory_total_bytes: number
  memory_free_bytes: number
  gpus: GpuDevice[]
  /** Node's `process.platform` and `process.arch` of the worker, for the engines' `canRun`; absent from older workers. */
  platform?: string
  arch?: string
  /** The version of the Python it makes engines' environments from (SERVICE_PYTHON, else python3); null: none. */
  python?: string | null
  /** The worker's own service process (its model processes are on their instances). */
  process?: ProcessUsage
  downloads?: DownloadTally[]
}

/** A worker as the supervisor sees it: where it is, what it has, and whether it still answers. */
export interface WorkerStatus {
  id: string
  address: string | null
  version: string
  state: 'ready' | 'lost'
  resources: WorkerResources
  /** Milliseconds since the epoch of the last sign of life (a heartbeat or a registration). */
  last_seen: number
}

/** A download's progress, over all of its files. */
export interface DownloadProgress {
  hub: string
  repo: string
  downloadedBytes: number
  totalBytes: number
  files: Array<{name: string; downloadedBytes: number; totalBytes: number}>
}

/**
 * How far a launch on a worker has got: fetching (or making) the weights, making the engine's Python environment
 * (only when it does not exist yet), then loading them.
 */
export type LaunchStep = {stage: 'downloading'; download: DownloadProgress} | {stage: 'generating'} | {stage: 'installing'} | {stage: 'loading'; fraction: number}

/** Where the weights of a spec can be read from. */
export type WeightsSource = 'local' | 'cache' | 'generated' | 'huggingface' | 'modelscope'

export type WorkerMemoryEstimate = MemoryEstimate & {source: WeightsSource}

/** One frame of a worker's stream: an engine event, a launch step, the launch's result, or an error. */
export type WorkerFrame = {event: unknown} | {progress: LaunchStep} | {summary: InstanceSummary} | {error: ServiceErrorShape}
