/**
 * What the HTTP routes need of the service behind them, by what they do rather than by which class does it:
 * the server's routes are written against these, and src/service/ hands them the supervisor and the worker
 * registry, so the server never imports the cluster.
 */
import type {Authority, ModelLookup} from '../kernel/contracts.js'
import type {CachedModel} from './cache.js'
import type {WorkerAdmissionReply} from './cluster.js'
import type {LaunchEstimateRequest, LaunchProgress, LaunchRequest, MemoryEstimateReply} from './launch.js'
import type {Registration} from './membership.js'
import type {ModelDescription} from './models.js'
import type {DownloadProgress, InstanceSummary, WorkerResources, WorkerStatus} from './worker.js'

/** A worker as `GET /v1/cluster/workers` lists it, with the uids of the models it runs. */
export type WorkerDescription = WorkerStatus & {models: string[]}

/** How a launch is made: for whom (what it may run and read; no one's authority when absent), and whether to wait. */
export interface LaunchOptions {
  authority?: Authority
  /** Whether the caller may register models: launching a hub model by name for the first time registers it. */
  mayRegister?: boolean
  signal?: AbortSignal
  waitReady?: boolean
  /** Set by the service itself for a launch a request caused (on-demand.ts); its `launching` event says so. */
  onDemand?: boolean
}

/** The models of the service: launched, followed, described, cached and stopped. */
export interface ModelService {
  /** Runs a launch parsed at the edge; with `waitReady`, answers once the model is ready. */
  launch(request: LaunchRequest, options?: LaunchOptions): Promise<{model_uid: string}>
  /** Says a launch request has arrived whose uid is not known yet; the function answered says it is. */
  launchArriving(): () => void
  estimateMemory(request: LaunchEstimateRequest, options?: Omit<LaunchOptions, 'waitReady'>): Promise<MemoryEstimateReply>
  progress(uid: string): LaunchProgress
  /** `lookup` says whether a 404 for a uid not running names the running models. */
  cancel(uid: string, lookup?: ModelLookup): Promise<void>
  terminate(uid: string, lookup?: ModelLookup): Promise<void>
  cachedModels(modelName?: string): Promise<Array<CachedModel & {worker: string}>>
  removeCachedModel(version: string): Promise<{model_version: string; paths: string[]}>
  describeAll(): ModelDescription[]
  describeModel(uid: string): ModelDescription
  engines(modelName: string, modelType?: string): Promise<Record<string, unknown>>
  describeWorkers(): WorkerDescription[]
}

/** How workers join a supervisor and stay in it, and how the cluster is stopped. */
export interface WorkerAdmission {
  register(registration: Registration): Promise<WorkerAdmissionReply>
  heartbeat(address: string, resources: WorkerResources, instances: InstanceSummary[]): void
  /** Stops every worker; answers the ids of those that could not be told. */
  shutdownWorkers(): Promise<string[]>
}

/** A model the service launches again after a restart, and why it last failed. */
export interface RestoredModel {
  launch: LaunchRequest & {model_uid: string}
  last_error?: {message: string; at: string}
}

/** The models launched again after a restart (every model that became ready and was not terminated): read, added, removed. */
export interface RestoredModels {
  list(): RestoredModel[]
  add(launch: RestoredModel['launch']): void
  remove(uid: string): boolean
}

/** How a pull is made, and told how far its download is. */
export interface PullOptions {
  authority?: Authority
  signal?: AbortSignal
  onProgress?(progress: DownloadProgress): void
}

/** Weights by the launch that would load them: downloaded without launching (Ollama's pull), or named for removal. */
export interface ModelWeights {
  /** The cached model version a launch with these fields loads. */
  version(request: LaunchRequest, options?: Pick<PullOptions, 'authority'>): string
  /** Resolves the request at once (a bad one throws here), then downloads what the cache lacks until `done`. */
  pull(request: LaunchRequest, options?: PullOptions): {model_version: string; done: Promise<void>}
}
