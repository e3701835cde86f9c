/**
 * The supervisor runs launches: it resolves each against the catalogue and the engines, places its replicas on
 * workers, follows the launch to ready (or cleans up after it), and answers for the models in its table. Workers
 * are reached only through `WorkerApi`, so local mode (one in-process worker) and cluster mode share this code.
 * The pieces it orchestrates live beside it: launch-resolution.ts, placement.ts, model-table.ts,
 * worker-membership.ts, cache-fanout.ts, descriptions.ts and launch-progress.ts.
 */
import type {Logger, ModelDirectory, ModelHandle, ModelLookup} from '../kernel/contracts.js'
import type {Kernel} from '../kernel/kernel.js'
import type {ModelState, ModelStateChanged, ServiceEvents, UnloadReason} from '../kernel/observability.js'
import type {OperationMap, UntypedOperations} from '../kernel/operations.js'
import type {ReachSettings} from '../kernel/reach.js'
import type {ModelRegistry} from '../kernel/registry.js'
import type {CachedModel} from '../protocol/cache.js'
import type {LaunchEstimateRequest, LaunchProgress, LaunchRequest} from '../protocol/launch.js'
import type {ModelDescription, ModelStatus} from '../protocol/models.js'
import type {LaunchOptions, ModelService} from '../protocol/services.js'
import type {VirtualEnvironment, VirtualEnvironmentService} from '../protocol/virtualenvs.js'
import type {InstanceLaunch, InstanceSummary, LaunchStep, ReportedInstance, WorkerMemoryEstimate, WorkerStatus} from '../protocol/worker.js'
import type {WorkerApi} from './worker.js'

import {conflict, ServiceError} from '../kernel/errors.js'
import {cacheEntryName} from '../weights/cache.js'
import {cachedModelsOf, removeCachedModelFrom} from './cache-fanout.js'
import {removeVirtualEnvironmentFrom, virtualEnvironmentsOf} from './virtualenv-fanout.js'
import {describeEngines, describeRecord} from './descriptions.js'
import {ableCandidates, workerFacts} from './engine-fit.js'
import {launchDetails, stepReport} from './model-events.js'
import {assignReplicaGpus, gpuCandidates, gpuMemoryCandidates} from './gpu-placement.js'
import {advance, failedProgress} from './launch-progress.js'
import {resolveHubLaunch} from './hub-launch.js'
import {memoryNeed, resolveLaunch} from './launch-resolution.js'
import {DEFAULT_RESTART_POLICY, type RestartPolicy} from './restart-policy.js'
import {ModelHealer} from './self-healing.js'
import {type InstanceRecord, modelHandle, type Replica, ModelTable} from './model-table.js'
import {chooseWorkers, namedCandidates} from './placement.js'
import {WorkerMembership} from './worker-membership.js'

export interface SupervisorOptions {
  kernel: Kernel
  registry: ModelRegistry
  workers: WorkerApi[]
  log: Logger
  /** Hub used when a launch names none (SERVICE_MODEL_SRC). */
  defaultHub?: string
  now?: () => number
  /** Where each change of a model's state is reported. */
  events?: ServiceEvents
  /** How a model whose process crashed is relaunched (restart-policy.ts); without one it stays failed. */
  restart?: RestartPolicy
  /** The operator's allow-lists for what launches may run and read (reach.ts). */
  reach?: ReachSettings
  /** Stops idle models, least recently used first, for a launch whose memory does not fit (on-demand.ts). */
  makeRoom?: {evictable(): boolean; evict(forUid: string): Promise<boolean>}
}

export class Supervisor implements ModelDirectory, ModelService, VirtualEnvironmentService {
  private readonly table = new ModelTable()
  private readonly membership: WorkerMembership
  /** Set once `dispose` began: no launch starts after that. */
  private closing = false
  private readonly now: () => number
  private readonly healer: ModelHealer

  constructor(private readonly options: SupervisorOptions) {
    this.now = options.now ?? (() => Math.floor(Date.now() / 1000))
    const changed = (record: InstanceRecord, state: ModelState, reason?: string) => this.changed(record, state, reason)
    this.healer = new ModelHealer({changed, log: options.log, policy: options.restart ?? {...DEFAULT_RESTART_POLICY, attempts: 0}})
    this.membership = new WorkerMembership(this.table, {changed, kernel: options.kernel, log: options.log, now: this.now}, options.workers)
  }

  /**
   * A worker joins, or joins again (after a restart of either side, or after it was lost): the models it
   * reports running come back into the table, so nothing a worker runs is ever forgotten by the supervisor.
   */
  addWorker(worker: WorkerApi, running: InstanceSummary[] = worker.instances()): void {
    this.membership.add(worker, running)
  }

  /**
   * A worker stopped answering: its models leave the list (a model with replicas elsewhere keeps serving),
   * and requests to them fail at once with `why` until the worker comes back.
   */
  loseWorker(id: string, why: string): void {
    this.membership.lose(id, why)
  }

  /** Every worker, as `GET /v1/cluster/workers` shows it, with the models each runs. */
  describeWorkers(): Array<WorkerStatus & {models: string[]}> {
    return this.membership.describe()
  }

  /** How busy each running instance is, by model and worker, as its worker last measured it (for the metrics). */
  instanceUsage(): ReportedInstance[] {
    return this.table.sorted().flatMap((record) =>
      record.replicas.map((replica) => ({
        instance: replica.uid,
        model: record.uid,
        usage: replica.worker.instances().find((summary) => summary.uid === replica.uid)?.usage ?? {},
        worker: replica.worker.id,
      })),
    )
  }

  /**
   * Starts a launch parsed by the route (a hub name, hf.co/…, is registered first: hub-launch.ts). With `waitReady` (the default, as in
   * Xinference) it answers once the model is ready, and a caller that goes away cancels it; without, it answers the uid at once (see `progress`).
   */
  async launch(request: LaunchRequest, {authority, mayRegister = false, onDemand, signal, waitReady = true}: LaunchOptions = {}): Promise<{model_uid: string}> {
    const placed = this.launchArriving()
    try {
      const hub = resolveHubLaunch(request, {authority, mayRegister, registry: this.options.registry, signal})
      return await (hub ? hub.then(({aliases, request: asked}) => this.start(asked, {aliases, authority, onDemand, placed, signal, waitReady})) : this.start(request, {authority, onDemand, placed, signal, waitReady}))
    } finally {
      placed()
    }
  }

  /**
   * Says that a launch request has arrived whose uid is not known yet; the function answered says it is
   * (the launch is in the table, or failed). Until then a terminate or cancel of an unknown uid waits.
   */
  launchArriving(): () => void {
    return this.table.launchArriving()
  }

  private async start(request: LaunchRequest, {aliases, authority, onDemand, placed, signal, waitReady}: LaunchOptions & {aliases?: string[]; placed: () => void; waitReady: boolean}): Promise<{model_uid: string}> {
    if (this.closing) throw shuttingDown()
    const {engine, entry, parameters, spec} = resolveLaunch(this.options, request, {authority})
    const replicas = request.replica ?? 1
    const load = {family: entry.family, modelName: entry.family.model_name, modelType: entry.modelType, parameters, spec}
    const holder = (worker: WorkerApi) => this.table.gpuHolder(worker)
    const wanted = request.model_uid ?? entry.family.model_name
    const able = () => ableCandidates(engine, {modelName: entry.family.model_name, spec}, namedCandidates(this.membership.candidates(), request.worker_ip ?? undefined))
    const placeable = () => gpuCandidates(request, gpuMemoryCandidates(entry.family.min_gpu_memory_gb, able(), entry.family.model_name), ({worker}) => holder(worker))
    let candidates = placeable()
    // With one candidate and one replica there is nothing to choose (its engine's own load error is the better answer)
    // unless an idle model could make room. Replicas on one worker add up, so they are checked against its memory even
    // when it is the only one. (No await otherwise, so the launch is in the table as soon as this call returns its promise.)
    const check = candidates.length > 1 || replicas > 1 || this.options.makeRoom?.evictable()
    const need = check ? await memoryNeed(this.options, candidates[0].worker, {engine: engine.name, load: {...load, modelUid: wanted}}, signal) : undefined
    let workers: WorkerApi[] | undefined
    while (!workers) {
      if (this.closing) throw shuttingDown()
      try {
        workers = chooseWorkers(candidates, need, replicas, wanted)
      } catch (error) {
        if ((error as ServiceError).code !== 'overloaded' || !(await this.options.makeRoom?.evict(wanted))) throw error
        candidates = placeable()
      }
    }
    const uid = this.table.chooseUid(request.model_uid, request.model_name)
    const gpus = assignReplicaGpus(request, workers, holder, uid)
    const type = this.options.kernel.modelType(entry.modelType)!.definition
    const launchOf = (replica: Replica): InstanceLaunch => ({
      engine: engine.name,
      load: {...load, modelUid: replica.uid, ...(replica.gpus ? {devices: replica.gpus} : {})},
      ...(replicas === 1 ? {} : {replicaOf: {modelUid: uid, replica: replicas}}),
    })
    const record: InstanceRecord = {
      abilities: entry.family.model_ability ?? type.defaultAbilities,
      aliases,
      controller: new AbortController(),
      created: this.now(),
      done: Promise.resolve(),
      downloaded: false,
      engine: engine.name,
      family: entry.family,
      info: {},
      modelName: entry.family.model_name,
      modelType: entry.modelType,
      next: 0,
      parameters,
      progress: {downloaded_bytes: 0, error: null, files: [], hub: spec.model_uri ? null : spec.model_hub, model_uid: uid, progress: 0, repo: spec.model_id, stage: 'pending', total_bytes: 0},
      replica: replicas,
      // Like Xinference, replicas of a model run as `<uid>-rep<i>`; a single instance keeps the model's uid.
      replicas: workers.map((worker, index) => ({gpus: gpus[index], uid: replicas === 1 ? uid : `${uid}-rep${index}`, worker})),
      spec,
      status: 'launching',
      uid,
    }
    for (const replica of record.replicas) replica.launch = launchOf(replica)
    this.table.add(record)
    placed()
    this.options.log.info(`launching ${uid}: ${cacheEntryName(record.modelName, spec)} on ${engine.name}, on ${workers.map((w) => w.id).join(', ')}`)
    this.changed(record, 'launching', undefined, {details: {...launchDetails(record), ...(onDemand ? {on_demand: true} : {})}, launch: {...request, model_uid: uid}})
    record.done = this.run(record, launchOf)
    if (!waitReady) {
      record.done.catch(() => {})
      return {model_uid: uid}
    }

    const cancel = () => record.controller.abort()
    signal?.addEventListener('abort', cancel, {once: true})
    try {
      await record.done
    } finally {
      signal?.removeEventListener('abort', cancel)
    }

    return {model_uid: uid}
  }

  /** Where a launch is: its stage, overall fraction and download bytes; a failed one's error until relaunched. */
  progress(uid: string): LaunchProgress {
    return this.table.progress(uid)
  }

  /** Cancels a launch in progress; answers once nothing of it is left (no process, no partial download). */
  async cancel(uid: string, lookup?: ModelLookup): Promise<void> {
    await this.table.arrivalOf(uid)
    const record = this.table.get(uid)
    if (!record) {
      const ended = this.table.endedLaunch(uid)
      if (ended) throw conflict(`the launch of ${uid} has already ended (${ended.stage}); there is nothing to cancel.`, 'model_uid')
      this.table.require(uid, lookup)
      return
    }

    if (record.status !== 'launching')
      throw conflict(`model ${uid} is not launching (it is ${record.status}); stop it with \`servicectl terminate --model-uid ${uid}\` instead.`, 'model_uid')
    this.options.log.info(`cancelling the launch of ${uid}`)
    record.controller.abort()
    await record.done.catch(() => {})
  }

  /** A model's status, and what settles once its launch is over (ready, or failed with why); undefined when it is not in the table. */
  state(uid: string): {status: ModelStatus; launched: Promise<void>} | undefined {
    const record = this.table.get(uid)
    return record && {launched: record.done, status: record.status}
  }

  /** Terminates a model (one still launching is cancelled); `unload` says the service unloads it and it stays known. */
  async terminate(uid: string, lookup?: ModelLookup, unload?: UnloadReason): Promise<void> {
    await this.table.arrivalOf(uid)
    // A model whose worker is gone has no process to stop here; terminated, it is not relaunched when the worker comes back.
    if (!this.table.get(uid) && this.table.lostReason(uid)) {
      const record = this.membership.forgetLost(uid)
      this.options.log.info(`terminated ${uid}, whose worker is gone: it will not be relaunched`)
      if (record) this.changed(record, 'terminated')
      return
    }

    const record = this.table.require(uid, lookup)
    if (record.status === 'launching') return this.cancel(uid, lookup)
    await this.healer.stop(record)
    record.status = 'terminating'
    try {
      const results = await Promise.allSettled(record.replicas.map((replica) => replica.worker.terminate(replica.uid)))
      const failure = results.find((result) => result.status === 'rejected' && !(result.reason instanceof ServiceError && result.reason.status === 404))
      if (failure) throw (failure as PromiseRejectedResult).reason
    } finally {
      this.table.remove(uid)
      this.changed(record, 'terminated', unload && `unloaded (${unload.replaceAll('_', ' ')})`, unload && {unload})
    }
  }

  /** Every worker's cached model versions (optionally of one model), each with the worker that has it. */
  cachedModels(modelName?: string): Promise<Array<CachedModel & {worker: string}>> {
    return cachedModelsOf(this.membership.ready(), modelName)
  }

  /** Deletes a model version from every worker's cache that has it; answers the deleted paths. */
  removeCachedModel(version: string): Promise<{model_version: string; paths: string[]}> {
    return removeCachedModelFrom(this.membership.ready(), version)
  }

  virtualEnvironments(): Promise<Array<VirtualEnvironment & {worker: string}>> {
    return virtualEnvironmentsOf(this.membership.ready())
  }

  removeVirtualEnvironment(name: string): Promise<{name: string; paths: string[]}> {
    return removeVirtualEnvironmentFrom(this.membership.ready(), name)
  }

  /**
   * How much memory a launch with this request would need, from the GGUF header in the cache or on the hub.
   * `context_length` is the engine's n_ctx, as Xinference's cal-model-mem names it.
   */
  async estimateMemory(request: LaunchEstimateRequest, {authority, signal}: Omit<LaunchOptions, 'waitReady'> = {}): Promise<WorkerMemoryEstimate & {model_version: string}> {
    const {context_length: contextLength, ...rest} = request
    const {engine, entry, parameters, spec} = resolveLaunch(this.options, contextLength === undefined ? rest : {...rest, n_ctx: contextLength}, {authority, needsEstimator: true})
    const [worker] = this.membership.ready()
    if (!worker) throw this.membership.noWorker()
    const estimate = await worker.estimateMemory({engine: engine.name, load: {family: entry.family, modelName: entry.family.model_name, modelType: entry.modelType, modelUid: '', parameters, spec}}, signal)
    return {...estimate, model_version: cacheEntryName(entry.family.model_name, spec)}
  }

  private async run(record: InstanceRecord, launchOf: (replica: Replica) => InstanceLaunch): Promise<void> {
    const {uid} = record
    try {
      const onProgress = (step: LaunchStep) => {
        advance(record, step)
        this.options.events?.report('launchStep', stepReport(uid, step))
      }
      const results = await Promise.allSettled(record.replicas.map((replica) => replica.worker.launch(launchOf(replica), {onProgress, signal: record.controller.signal})))
      const failed = results.find((result) => result.status === 'rejected')
      const cancelled = record.controller.signal.aborted
      if (failed || cancelled) {
        // All replicas or none: the ones that did load are ended, so a failed launch leaves nothing running. A
        // cancel that came as the load finished ends them all (a remote worker may have loaded one it could not report).
        await Promise.allSettled(record.replicas.filter((_, i) => cancelled || results[i].status === 'fulfilled').map((replica) => replica.worker.terminate(replica.uid)))
        throw failed ? (failed as PromiseRejectedResult).reason : record.controller.signal.reason
      }

      const summaries = results.map((result) => (result as PromiseFulfilledResult<InstanceSummary>).value)
      for (const [i, replica] of record.replicas.entries()) replica.pid = summaries[i].pid
      const [summary] = summaries
      record.status = 'ready'
      record.info = summary.info
      record.contextLength = typeof summary.info.contextLength === 'number' ? summary.info.contextLength : undefined
      if (Array.isArray(summary.info.abilities)) record.abilities = summary.info.abilities as string[]
      record.progress = {...record.progress, progress: 1, stage: 'ready'}
      this.changed(record, 'ready')
    } catch (error) {
      // A failed launch leaves no stale uid behind; its cause goes back to the caller verbatim, and the
      // progress route keeps it for whoever launched without waiting.
      this.table.remove(uid)
      const cancelled = record.controller.signal.aborted
      const shaped = error instanceof ServiceError ? error : new ServiceError(500, 'launch_failed', (error as Error).message)
      const reason = record.controller.signal.reason
      const final = cancelled
        ? reason instanceof ServiceError
          ? reason
          : new ServiceError(499, 'request_aborted', `the launch of ${uid} was cancelled.`)
        : shaped.code === 'launch_failed'
          ? new ServiceError(shaped.status, shaped.code, `failed to launch ${uid}: ${shaped.message}`, shaped.param)
          : shaped
      if (cancelled) this.options.log.info(`launch of ${uid} cancelled`)
      else this.options.log.error(`launch of ${uid} failed: ${shaped.message}`)
      record.progress = {...record.progress, error: {code: final.code, message: final.message, status: final.status}, stage: cancelled ? 'cancelled' : 'error'}
      this.table.endLaunch(uid, record.progress)
      this.changed(record, cancelled ? 'terminated' : 'error', final.message)
      throw final
    }
  }

  /** Every running model's description, by uid (the `GET /v1/models` entries). */
  describeAll(): ModelDescription[] {
    return this.table.sorted().map((record) => describeRecord(record))
  }

  describeModel(uid: string): ModelDescription {
    return describeRecord(this.table.require(uid))
  }

  /** Marks a model whose process died on its own; requests to it get the same error until it is relaunched (by self-healing, or an operator). */
  markCrashed(instanceUid: string, error: ServiceError, pid?: number): void {
    const held = this.table.replicaOf(instanceUid)
    const failed = this.table.markCrashed(instanceUid, error, pid)
    // One replica of several died and left the rotation: the others serve while it is relaunched.
    if (!failed && held && held.record.status === 'ready' && !held.record.replicas.includes(held.replica)) this.healer.replicaCrashed(held.record, held.replica, error)
    if (!failed) return
    // The crash as the model, its events and later requests show it: what happened, then what happens next.
    const told = new ServiceError(error.status, error.code, `${error.message.replace(/\.$/, '')}; ${this.healer.outlook(failed)}`)
    failed.error = told
    failed.progress = failedProgress(failed.progress, told)
    this.changed(failed, 'error', told.message)
    this.healer.crashed(failed, error)
  }

  /** Typed as the asking route's model type declares (see ModelDirectory.get); the model's process checks the name. */
  get<Ops extends OperationMap<Ops> = UntypedOperations>(uid: string, lookup?: ModelLookup): ModelHandle<Ops> {
    return modelHandle(this.table.require(uid, lookup)) as unknown as ModelHandle<Ops>
  }

  list(): ModelHandle[] {
    return this.table.sorted().map((record) => modelHandle(record))
  }

  /**
   * Which engine can run which format, size and quantization of a model, in Xinference's
   * `GET /v1/engines/{model_name}` shape; an engine that cannot run here maps to the reason instead.
   */
  async engines(modelName: string, modelType?: string): Promise<Record<string, unknown>> {
    return describeEngines(this.options.kernel, this.options.registry, (await this.membership.settledReady()).map((worker) => workerFacts(worker.status())), modelName, modelType)
  }

  /**
   * Ordered shutdown: no launch starts any more, those in progress (downloading, loading) are cancelled and
   * leave nothing behind, then every instance's process is asked to free its model, and the workers go.
   */
  async dispose(): Promise<void> {
    this.closing = true
    const launching = this.table.sorted().filter((record) => record.status === 'launching')
    for (const record of launching) record.controller.abort(shuttingDown(`the launch of ${record.uid} was cancelled`))
    await Promise.all([...launching.map((record) => record.done.catch(() => {})), ...this.table.sorted().map((record) => this.healer.stop(record))])
    await Promise.all(this.membership.all().map((worker) => worker.dispose()))
    this.table.clear()
  }

  private changed(record: InstanceRecord, state: ModelState, reason?: string, extra?: Pick<ModelStateChanged, 'details' | 'launch' | 'unload'>) {
    this.options.events?.report('model', {modelName: record.modelName, modelType: record.modelType, state, uid: record.uid, ...(reason ? {reason} : {}), ...extra})
  }
}

/** The answer to a launch the service's shutdown stopped, or one that came after it began. */
function shuttingDown(what = 'no model can be launched'): ServiceError {
  return new ServiceError(503, 'shutting_down', `${what}: the service is shutting down.`)
}
