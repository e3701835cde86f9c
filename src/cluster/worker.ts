/**
 * A worker hosts model instances, each in its own child process. The supervisor talks to workers only
 * through `WorkerApi`; in local mode the worker lives in the same process, and cluster mode puts the same
 * interface on the network.
 */
import {availableParallelism, freemem, totalmem} from 'node:os'
import {basename, join} from 'node:path'

import type {EngineDefinition, LoadedModelInfo, LoadRequest, Logger, MemoryEstimate, MemoryEstimateRequest} from '../kernel/contracts.js'
import type {DownloadProgress, GpuDevice, InstanceLaunch, InstanceSummary, LaunchStep, WorkerMemoryEstimate, WorkerResources, WorkerStatus} from '../protocol/worker.js'
import type {Kernel} from '../kernel/kernel.js'
import type {PythonEnvironment, PythonEnvRequest, VirtualEnvSettings} from '../kernel/virtualenv.js'
import type {PythonEnvironments} from '../python-env/environments.js'
import type {VirtualEnvironment} from '../protocol/virtualenvs.js'
import type {CachedModel} from '../weights/cache.js'

import {gpuEnvironment} from '../kernel/devices.js'
import {badRequest, conflict, notFound, ServiceError} from '../kernel/errors.js'
import {mergeVirtualEnv} from '../kernel/virtualenv.js'
import {ExternalProgram} from '../model-process/external-program.js'
import {InstanceProcess, instanceSpawner, type SpawnInstance} from '../model-process/instance-process.js'
import {runIsolated} from '../model-process/isolated.js'
import {streamInterval} from '../model-process/outbox.js'
import {companionSizes, companionVersions, withCompanions, withCompanionSizes} from '../weights/companions.js'
import {type WeightStore, type WeightsLocation, weightsVersion} from '../weights/store.js'
import {environmentInUse} from './virtualenv-fanout.js'
import {WorkerUsage} from './worker-usage.js'

export interface LaunchOptions {
  /** Aborting it cancels the launch; the worker leaves nothing behind (no process, no partial download). */
  signal?: AbortSignal
  onProgress?(step: LaunchStep): void
}

export interface WorkerApi {
  readonly id: string
  launch(launch: InstanceLaunch, options?: LaunchOptions): Promise<InstanceSummary>
  terminate(uid: string): Promise<void>
  invoke(uid: string, operation: string, payload: unknown, signal: AbortSignal): AsyncIterable<unknown>
  instances(): InstanceSummary[]
  /** Model versions in this worker's weights cache. */
  cachedModels(): Promise<CachedModel[]>
  /** Deletes a model version from the cache, unless a model running (or launching) here uses it. */
  removeCachedModel(version: string): Promise<string[]>
  /** The Python environments on this worker, with the models using each. */
  virtualEnvironments(): Promise<VirtualEnvironment[]>
  /** Deletes a Python environment, unless a model running (or launching) here uses it; answers its path. */
  removeVirtualEnvironment(name: string): Promise<string>
  /** Memory a launch with these parameters would need, from the weights' header (cached, or on the hub). */
  estimateMemory(launch: InstanceLaunch, signal?: AbortSignal): Promise<WorkerMemoryEstimate>
  /** Downloads a launch's weights into this worker's cache without starting anything (Ollama's pull); only a local worker can. */
  download?(launch: InstanceLaunch, options: {onProgress?(progress: DownloadProgress): void; signal?: AbortSignal}): Promise<void>
  status(): WorkerStatus
  /** Resolves once what `status` reports is known (a local worker probes its Python when first asked). */
  settled?(): Promise<unknown>
  /** Measures its processes for the metrics (a local worker's own; a remote one's come in its heartbeats). */
  measure?(): Promise<void>
  /** Stops using the worker. A local worker ends its models; a remote one keeps running them (they are not ours to end). */
  dispose(): Promise<void>
}

export interface LocalWorkerOptions {
  id: string
  kernel: Kernel
  logDir: string
  log: Logger
  /** Finds, and downloads when needed, the weights of a spec. */
  weights: WeightStore
  spawn?: SpawnInstance
  /** Makes the virtual environments of engines that run Python; without it such engines cannot launch here. */
  pythonEnvironments?: PythonEnvironments
  /** Told when an instance's process dies on its own, so the supervisor can show it on the model. */
  onCrash?: (uid: string, error: ServiceError) => void
  env?: Record<string, string>
  version?: string
  /** This machine's resources; injected by tests. */
  resources?: () => WorkerResources
  /** Where engines keep what they derive from model files across launches, a folder per engine (LoadContext.cacheDir). */
  engineCacheDir?: string
  /** Resolves once `resources` answers all it will (its Python version probed). */
  resourcesSettled?: () => Promise<unknown>
  /** What it measures of its processes and downloads, for the metrics. */
  usage?: WorkerUsage
}

/** CPU and memory of this machine, and its GPUs and Python as found when the worker started (devices.ts, toolchain.ts). */
export function machineResources(gpus: GpuDevice[] = [], python?: string | null): WorkerResources {
  return {arch: process.arch, cpu_count: availableParallelism(), gpus, memory_free_bytes: freemem(), memory_total_bytes: totalmem(), platform: process.platform, ...(python === undefined ? {} : {python})}
}

/**
 * A registration's `dimensions` is what clients are told the vectors are (GET /v1/models, servicectl registrations):
 * one that the loaded file contradicts would have them size their vector index wrongly, so the launch is refused.
 */
function refuseContradictedDimensions({family}: Pick<LoadRequest, 'family'>, info: LoadedModelInfo): void {
  const declared = family.dimensions
  if (typeof declared !== 'number' || typeof info.dimensions !== 'number' || declared === info.dimensions) return
  throw badRequest(
    `${family.model_name} is registered with dimensions ${declared}, but its file makes ${info.dimensions}-dimensional embeddings; register it again with dimensions: ${info.dimensions}.`,
    'dimensions',
  )
}

export class LocalWorker implements WorkerApi {
  readonly id: string
  private readonly running = new Map<string, ExternalProgram | InstanceProcess>()
  /** The cache entries each model launching or running here uses (its weights', its companions'), by uid. */
  private readonly versions = new Map<string, string[]>()
  /** The Python environments each model launching or running here uses, by uid. */
  private readonly environments = new Map<string, Set<string>>()
  private readonly launches = new Map<string, InstanceLaunch>()
  /**
   * Each uid launching or running here, with the launch that holds it: taken before the first await, so that a second
   * launch of the uid is refused while the first still checks, and a launch that ends clears only what is its own.
   */
  private readonly holders = new Map<string, symbol>()
  /** Aborted by `dispose`: launches in progress stop, and none starts after. */
  private readonly closing = new AbortController()
  /** Launches in progress, settled once each has a process or has left nothing behind. */
  private readonly starting = new Set<Promise<unknown>>()

  private readonly usage: WorkerUsage
  /** How an external program's stream is paced: as a model process paces its own, with the interval it is given. */
  private readonly streamIntervalMs: number

  constructor(private readonly options: LocalWorkerOptions) {
    this.id = options.id
    this.usage = options.usage ?? new WorkerUsage()
    this.streamIntervalMs = streamInterval(options.env ?? {}, (message) => options.log.warn(message))
  }

  async launch(launch: InstanceLaunch, {onProgress, signal}: LaunchOptions = {}): Promise<InstanceSummary> {
    if (this.closing.signal.aborted) throw this.closing.signal.reason
    const started = this.start(launch, onProgress, signal ? AbortSignal.any([signal, this.closing.signal]) : this.closing.signal)
    this.starting.add(started)
    try {
      return await started
    } finally {
      this.starting.delete(started)
    }
  }

  private async start(launch: InstanceLaunch, onProgress: LaunchOptions['onProgress'], signal: AbortSignal): Promise<InstanceSummary> {
    const {engine: engineName, load} = launch
    const {kernel, log} = this.options
    const engine = kernel.engine(engineName)?.definition
    if (!engine) throw badRequest(`engine "${engineName}" is not installed on worker ${this.id}.`, 'model_engine')
    if (this.holders.has(load.modelUid)) throw conflict(`model uid "${load.modelUid}" is already running (or launching, or ending) on worker ${this.id}.`, 'model_uid')
    const holder = Symbol(load.modelUid)
    this.holders.set(load.modelUid, holder)
    try {
      await this.checkAvailable(engine)
      await engine.checkLaunch?.(load)
    } catch (error) {
      this.forget(load.modelUid, holder)
      throw error
    }

    const versions = [...(load.spec.model_uri ? [] : [weightsVersion(load)]), ...companionVersions(load.spec, load.parameters)]
    if (versions.length > 0) this.versions.set(load.modelUid, versions)
    const logFile = join(this.options.logDir, 'models', `${load.modelUid}.log`)
    let modelPath: string
    let parameters: Record<string, unknown>
    let python: PythonEnvironment | undefined
    try {
      const makeEnvironment = (request: PythonEnvRequest, environmentSignal: AbortSignal) => this.makeEnvironment(engine, load.modelUid, request, logFile, onProgress, environmentSignal)
      modelPath = await this.options.weights.resolve(load, {
        onGenerating: () => onProgress?.({stage: 'generating'}),
        onProgress: (download) => onProgress?.({download, stage: 'downloading'}),
        python: (requirements, generationSignal) => makeEnvironment(mergeVirtualEnv(requirements, undefined), generationSignal),
        signal,
      })
      parameters = await withCompanions(this.options.weights, load.spec, load.parameters, {onProgress: (download) => onProgress?.({download, stage: 'downloading'}), signal})
      await engine.checkFiles?.({...load, modelPath, parameters})
      if (engine.external && engine.python) python = await makeEnvironment(mergeVirtualEnv(engine.python, load.family.virtualenv as VirtualEnvSettings | undefined), signal)
    } catch (error) {
      this.forget(load.modelUid, holder)
      throw error
    }

    const spawn = this.options.spawn ?? (await instanceSpawner())
    if (signal.aborted) {
      this.forget(load.modelUid, holder)
      throw signal.reason instanceof ServiceError ? signal.reason : new ServiceError(499, 'request_aborted', `the launch of ${load.modelUid} was cancelled before its model process started.`)
    }

    onProgress?.({fraction: 0, stage: 'loading'})
    // The GPUs given to this model alone, for a Node host and an external program alike.
    const env = {...engine.processEnvironment, ...this.options.env, ...gpuEnvironment(load.devices)}
    // The service's log gets the crash with all of the output kept; clients get it without other requests' lines.
    const onCrash = (error: ServiceError, report: string) => {
      log.error(`model ${load.modelUid}: ${report}`)
      this.options.onCrash?.(load.modelUid, error)
    }

    const instance = engine.external
      ? new ExternalProgram(load.modelUid, engine.external, {env, logFile, python, streamIntervalMs: this.streamIntervalMs}, onCrash)
      : new InstanceProcess(load.modelUid, spawn, {cacheDir: this.options.engineCacheDir && join(this.options.engineCacheDir, engine.name), env, logFile}, onCrash)
    this.running.set(load.modelUid, instance)
    this.launches.set(load.modelUid, launch)
    try {
      const loading = (fraction: number) => onProgress?.({fraction, stage: 'loading'})
      const request = {...load, modelPath, parameters}
      await (instance instanceof ExternalProgram ? instance.load(request, signal, loading) : instance.load(engine.hostModule!, request, signal, loading))
      refuseContradictedDimensions(load, instance.info)
    } catch (error) {
      this.forget(load.modelUid, holder)
      await instance.dispose(1000)
      throw error
    }

    log.info(`model ${load.modelUid} is ready (engine ${engine.name}, pid ${instance.pid})`)
    return this.summary(instance)
  }

  async terminate(uid: string): Promise<void> {
    const instance = this.running.get(uid)
    if (!instance) throw notFound(`model ${uid} is not running on worker ${this.id}.`, 'model_not_found')
    this.forget(uid, this.holders.get(uid))
    await instance.dispose()
    this.options.log.info(`model ${uid} terminated`)
  }

  /** Clears what a uid holds here, if `holder` still holds it: a launch that ends never clears its successor's. */
  private forget(uid: string, holder: symbol | undefined): void {
    if (holder === undefined || this.holders.get(uid) !== holder) return
    this.holders.delete(uid)
    this.running.delete(uid)
    this.versions.delete(uid)
    this.environments.delete(uid)
    this.launches.delete(uid)
  }

  invoke(uid: string, operation: string, payload: unknown, signal: AbortSignal): AsyncIterable<unknown> {
    const instance = this.running.get(uid)
    if (!instance) throw notFound(`model ${uid} is not running on worker ${this.id}.`, 'model_not_found')
    return instance.invoke(operation, payload, signal)
  }

  instances(): InstanceSummary[] {
    return [...this.running.values()].map((instance) => this.summary(instance))
  }

  async cachedModels(): Promise<CachedModel[]> {
    return this.options.weights.cache.list()
  }

  async removeCachedModel(version: string): Promise<string[]> {
    const users = [...this.versions].filter(([, used]) => used.includes(version)).map(([uid]) => uid)
    if (users.length > 0)
      throw conflict(`${version} is in use by ${users.length === 1 ? 'model' : 'models'} ${users.join(', ')} on worker ${this.id}; terminate ${users.length === 1 ? 'it' : 'them'} first.`, 'model_version')
    if (this.options.weights.downloading(version)) throw conflict(`${version} is being downloaded by a launch; cancel that launch first.`, 'model_version')
    const removed = await this.options.weights.cache.remove(version)
    this.options.log.info(`removed ${version} from the cache (${removed.length} files)`)
    return removed
  }

  /** The uids of the models running or launching with an environment, in order (races launch them in any order). */
  private environmentUsers(name: string): string[] {
    return [...this.environments]
      .filter(([, names]) => names.has(name))
      .map(([uid]) => uid)
      .sort()
  }

  async virtualEnvironments(): Promise<VirtualEnvironment[]> {
    const records = (await this.options.pythonEnvironments?.list()) ?? []
    return records.map((record) => ({...record, models: this.environmentUsers(record.name)}))
  }

  async removeVirtualEnvironment(name: string): Promise<string> {
    const users = this.environmentUsers(name)
    if (users.length > 0) throw environmentInUse(name, [{models: users, worker: this.id}])
    if (!this.options.pythonEnvironments) throw notFound(`worker ${this.id} has no Python environments.`, 'not_found', 'name')
    const path = await this.options.pythonEnvironments.remove(name)
    this.options.log.info(`removed Python environment ${name}`)
    return path
  }

  async estimateMemory({engine: engineName, load}: InstanceLaunch, signal?: AbortSignal): Promise<WorkerMemoryEstimate> {
    const engine = this.options.kernel.engine(engineName)?.definition
    if (!engine) throw badRequest(`engine "${engineName}" is not installed on worker ${this.id}.`, 'model_engine')
    if (!engine.estimatorModule) throw new ServiceError(400, 'unsupported', `engine ${engine.name} cannot estimate memory; choose another engine.`, 'model_engine')
    const location = await this.options.weights.locate(load, signal)
    const request: MemoryEstimateRequest = {files: location.files, headers: location.headers, modelType: load.modelType, parameters: load.parameters, sizes: location.sizes, spec: load.spec}
    const estimate = await runIsolated<MemoryEstimate>(engine.estimatorModule, request, {signal})
    // The files a launch downloads beside the weights (an image model's VAE and text encoders) are loaded too.
    return withCompanionSizes({...estimate, source: location.source}, await companionSizes(this.options.weights, load.spec, load.parameters, signal))
  }

  async download({load}: InstanceLaunch, {onProgress, signal}: {onProgress?(progress: DownloadProgress): void; signal?: AbortSignal}): Promise<void> {
    await this.options.weights.resolve(load, {onProgress, signal})
  }

  status(): WorkerStatus {
    const resources = {...(this.options.resources ?? machineResources)(), ...this.usage.resources()}
    return {address: null, id: this.id, last_seen: Date.now(), resources, state: 'ready', version: this.options.version ?? ''}
  }

  async settled(): Promise<void> {
    await this.options.resourcesSettled?.()
  }

  async measure(): Promise<void> {
    await this.usage.measure([...this.running.values()].flatMap((instance) => (instance.pid === undefined ? [] : [instance.pid])))
  }

  /** Cancels the launches in progress, then ends every model: each process gets a grace period to exit, then is killed. */
  async dispose(): Promise<void> {
    this.closing.abort(new ServiceError(503, 'shutting_down', `worker ${this.id} is shutting down; no model starts on it any more.`))
    const all = [...this.running.values()]
    this.running.clear()
    await Promise.all([...[...this.starting].map((launch) => launch.catch(() => {})), ...all.map((instance) => instance.dispose())])
  }

  private summary(instance: ExternalProgram | InstanceProcess): InstanceSummary {
    const engine = instance instanceof InstanceProcess ? instance.usage : undefined
    const usage = {
      ...(engine ? {requests_waiting: engine.requestsWaiting, sequences_in_use: engine.sequencesInUse, sequences_total: engine.sequencesTotal} : {}),
      process: this.usage.of(instance.pid),
    }
    return {error: instance.failure?.message, info: instance.info, launch: this.launches.get(instance.uid), pid: instance.pid, state: instance.state, uid: instance.uid, usage}
  }

  /** A virtual environment an engine (or the generator of its weights) needs, made on the first launch that needs it. */
  private async makeEnvironment(engine: EngineDefinition, uid: string, request: PythonEnvRequest, logFile: string, onProgress: LaunchOptions['onProgress'], signal: AbortSignal) {
    const environments = this.options.pythonEnvironments
    if (!environments) throw new ServiceError(400, 'unsupported', `worker ${this.id} cannot make Python environments, which engine ${engine.name} needs.`, 'model_engine')
    try {
      const made = await environments.ensure(request, {logFile, onInstalling: () => onProgress?.({stage: 'installing'}), signal})
      this.environments.set(uid, new Set([...(this.environments.get(uid) ?? []), basename(made.envDir)]))
      return made
    } catch (error) {
      // A worker shutting down says so rather than that the launch was cancelled.
      throw signal.aborted && signal.reason instanceof ServiceError ? signal.reason : error
    }
  }

  private async checkAvailable(engine: EngineDefinition) {
    const availability = (await engine.availability?.()) ?? true
    if (availability !== true)
      throw new ServiceError(400, 'unsupported', `engine ${engine.name} cannot run on worker ${this.id}: ${availability}`, 'model_engine')
  }
}
