/**
 * The supervisor owns the table of running models: it validates launches against the catalogue and the
 * engines, places each instance on a worker, routes requests to it and reports its state. Workers are
 * reached only through `WorkerApi`, so local mode (one in-process worker) and cluster mode share this code.
 */
import {randomBytes} from 'node:crypto'

import type {EngineDefinition, EngineParameter, LoadedModelInfo, Logger, ModelDirectory, ModelHandle} from '../kernel/contracts.js'
import type {Kernel} from '../kernel/kernel.js'
import type {ModelRegistry} from '../kernel/registry.js'
import type {LaunchProgress} from '../protocol/launch.js'
import type {InstanceLaunch, InstanceSummary, LaunchStep, WorkerApi, WorkerMemoryEstimate, WorkerStatus} from './worker.js'

import {flattenFamily, matchSpec, type ResolvedSpec} from '../kernel/catalogue.js'
import {badRequest, conflict, notFound, ServiceError} from '../kernel/errors.js'
import * as s from '../kernel/schema.js'
import {cacheEntryName, type CachedModel} from '../weights/cache.js'

const UID = /^[A-Za-z0-9][\w.-]{0,99}$/
const SIZE = s.union([s.string({minLength: 1}), s.number({minimum: 0})], 'a size in billions such as "0_5" or 7')

const launchFields = {
  download_hub: s.optional(s.string({description: 'Hub to fetch weights from (huggingface, modelscope); overrides SERVICE_MODEL_SRC.', enum: ['huggingface', 'modelscope']})),
  model_engine: s.optional(s.string({description: 'Engine to run the model with (llama.cpp, vllm, …); required for LLM.', minLength: 1})),
  model_format: s.optional(s.string({description: 'Model format, e.g. ggufv2 or pytorch.', minLength: 1})),
  model_name: s.string({description: 'Name of a registered model.', minLength: 1}),
  model_size_in_billions: s.optional(SIZE),
  model_type: s.optional(s.string({description: 'Model type (LLM, embedding, …); found from the catalogue when omitted.', minLength: 1})),
  model_uid: s.optional(s.string({description: 'Handle of the instance; defaults to the model name.', pattern: UID})),
  n_gpu: s.optional(s.union([s.literal('auto'), s.integer({minimum: 0})], '"auto", null or a number of GPUs')),
  quantization: s.optional(s.string({minLength: 1})),
  replica: s.optional(s.integer({description: 'Number of instances, spread over the workers; requests are balanced among them (round robin).', minimum: 1})),
  size_in_billions: s.optional(SIZE),
  worker_ip: s.optional(s.nullable(s.string({description: 'Run on this worker (its address or host, as `GET /v1/workers` lists it) instead of the one with the most room.'}))),
}

export const launchSchema = s.object(launchFields, {
  description: 'Launch fields; any other field is an engine parameter (n_ctx, n_parallel, …).',
  title: 'LaunchRequest',
  unknownKeys: 'keep',
})

export const memoryEstimateSchema = s.object(
  {
    ...launchFields,
    context_length: s.optional(s.integer({description: "Context length per request, in tokens (the engine's n_ctx).", minimum: 16})),
  },
  {description: 'The model as a launch names it, and the engine parameters it would be launched with.', title: 'MemoryEstimateRequest', unknownKeys: 'keep'},
)

export type LaunchRequest = s.Infer<typeof launchSchema>

/** Keys Xinference clients send with every launch, often as null, that are not engine parameters here. */
const CLIENT_KEYS = new Set(['gpu_idx', 'peft_model_config', 'request_limits', 'enable_virtual_env', 'virtual_env_packages', 'envs', 'model_path'])

export type ModelStatus = 'launching' | 'ready' | 'error' | 'terminating'

/** Of a launch that downloads, the share of its progress that is the download; loading is the rest. */
const DOWNLOAD_SHARE = 0.9
/** Failed and cancelled launches whose outcome the progress route still answers. */
const ENDED_KEPT = 100

/** One running copy of a model, on one worker; `uid` is its handle there. */
interface Replica {
  worker: WorkerApi
  uid: string
  pid?: number
}

const GIB = 1024 ** 3
const gib = (bytes: number) => `${(bytes / GIB).toFixed(1)} GiB`

interface InstanceRecord {
  uid: string
  modelType: string
  modelName: string
  engine: string
  spec: ResolvedSpec
  abilities: string[]
  family: Record<string, unknown>
  parameters: Record<string, unknown>
  /** Where the model runs: one entry per replica placed (a lost worker's replicas leave). */
  replicas: Replica[]
  /** How many replicas the launch asked for. */
  replica: number
  /** Round-robin position among the replicas. */
  next: number
  status: ModelStatus
  error?: ServiceError
  created: number
  contextLength?: number
  /** What the engine reported when the model loaded. */
  info: LoadedModelInfo
  progress: LaunchProgress
  downloaded: boolean
  /** Aborted to cancel the launch. */
  controller: AbortController
  /** Settles when the launch is over: ready, or failed and cleaned up. */
  done: Promise<void>
}

export interface SupervisorOptions {
  kernel: Kernel
  registry: ModelRegistry
  workers: WorkerApi[]
  log: Logger
  /** Hub used when a launch names none (SERVICE_MODEL_SRC). */
  defaultHub?: string
  now?: () => number
}

export class Supervisor implements ModelDirectory {
  private readonly instances = new Map<string, InstanceRecord>()
  private readonly workers = new Map<string, WorkerApi>()
  /** Models whose worker stopped answering, by uid, with why: requests to them get a 503 saying so. */
  private readonly lost = new Map<string, string>()
  /** The last progress of launches that failed or were cancelled, by uid; their uids are free again. */
  private readonly ended = new Map<string, LaunchProgress>()
  /**
   * Launches whose uid is not in the table yet (a request whose body is still arriving, a placement still
   * choosing a worker): a terminate or cancel of a uid not in the table waits for them, so one sent together
   * with the launch finds it instead of a 404 that leaves the model running.
   */
  private readonly arriving = new Set<Promise<void>>()
  /** Set once `dispose` began: no launch starts after that. */
  private closing = false
  private readonly now: () => number

  constructor(private readonly options: SupervisorOptions) {
    this.now = options.now ?? (() => Math.floor(Date.now() / 1000))
    for (const worker of options.workers) this.workers.set(worker.id, worker)
  }

  /**
   * A worker joins, or joins again (after a restart of either side, or after it was lost): the models it
   * reports running come back into the table, so nothing a worker runs is ever forgotten by the supervisor.
   */
  addWorker(worker: WorkerApi, running: InstanceSummary[] = worker.instances()): void {
    const previous = this.workers.get(worker.id)
    if (previous && previous !== worker) this.detach(previous)
    this.workers.set(worker.id, worker)
    for (const summary of running) this.adopt(worker, summary)
  }

  /**
   * A worker stopped answering: its models leave the list (a model with replicas elsewhere keeps serving),
   * and requests to them fail at once with `why` until the worker comes back.
   */
  loseWorker(id: string, why: string): void {
    const worker = this.workers.get(id)
    if (!worker) return
    for (const uid of this.detach(worker)) this.lost.set(uid, `model ${uid} is unavailable: ${why}`)
    this.options.log.warn(`worker ${id} lost: ${why}`)
  }

  /** Every worker, as `GET /v1/workers` shows it, with the models each runs. */
  describeWorkers(): Array<WorkerStatus & {models: string[]}> {
    return [...this.workers.values()].map((worker) => ({
      ...worker.status(),
      models: this.sorted().filter((record) => record.replicas.some((r) => r.worker === worker)).map((record) => record.uid),
    }))
  }

  /** Removes a worker's replicas from every model; answers the uids of the models left with none. */
  private detach(worker: WorkerApi): string[] {
    const emptied: string[] = []
    for (const record of this.instances.values()) {
      if (record.status === 'launching' || !record.replicas.some((r) => r.worker === worker)) continue
      record.replicas = record.replicas.filter((r) => r.worker !== worker)
      if (record.replicas.length === 0) {
        this.instances.delete(record.uid)
        emptied.push(record.uid)
      }
    }

    return emptied
  }

  /** Takes an instance a worker reports into the table: a model of its own, or one more replica of one. */
  private adopt(worker: WorkerApi, summary: InstanceSummary) {
    const {launch} = summary
    if (!launch || (summary.state !== 'ready' && summary.state !== 'crashed')) return
    const uid = launch.replicaOf?.modelUid ?? launch.load.modelUid
    const replica: Replica = {pid: summary.pid, uid: summary.uid, worker}
    const existing = this.instances.get(uid)
    if (existing) {
      if (existing.status !== 'launching' && !existing.replicas.some((r) => r.uid === summary.uid)) existing.replicas.push(replica)
      return
    }

    const {load} = launch
    const type = this.options.kernel.modelType(load.modelType)?.definition
    const crash = summary.state === 'crashed' ? new ServiceError(503, 'model_crashed', summary.error ?? `model ${uid} crashed.`) : undefined
    const ready: LaunchProgress = {downloaded_bytes: 0, error: null, files: [], hub: null, model_uid: uid, progress: 1, repo: load.spec.model_id ?? null, stage: 'ready', total_bytes: 0}
    const abilities = Array.isArray(summary.info.abilities) ? (summary.info.abilities as string[]) : (load.family.model_ability ?? type?.defaultAbilities ?? [])
    this.instances.set(uid, {
      abilities,
      contextLength: typeof summary.info.contextLength === 'number' ? summary.info.contextLength : undefined,
      controller: new AbortController(),
      created: this.now(),
      done: Promise.resolve(),
      downloaded: false,
      engine: launch.engine,
      error: crash,
      family: load.family,
      info: summary.info,
      modelName: load.modelName,
      modelType: load.modelType,
      next: 0,
      parameters: load.parameters,
      progress: crash ? failedProgress(ready, crash) : ready,
      replica: launch.replicaOf?.replica ?? 1,
      replicas: [replica],
      spec: load.spec as ResolvedSpec,
      status: summary.state === 'crashed' ? 'error' : 'ready',
      uid,
    })
    this.lost.delete(uid)
    this.options.log.info(`model ${uid} is running on worker ${worker.id}`)
  }

  /**
   * Validates a launch and starts it. With `waitReady` (the default, as in Xinference) it answers once the
   * model is ready, and a caller that goes away cancels the launch; without, it answers the uid at once and
   * the launch goes on, followed through `progress(uid)`.
   */
  async launch(body: unknown, {signal, waitReady = true}: {signal?: AbortSignal; waitReady?: boolean} = {}): Promise<{model_uid: string}> {
    const placed = this.launchArriving()
    try {
      return await this.start(body, {placed, signal, waitReady})
    } finally {
      placed()
    }
  }

  /**
   * Says that a launch request has arrived whose uid is not known yet; the function answered says it is
   * (the launch is in the table, or failed). Until then a terminate or cancel of an unknown uid waits.
   */
  launchArriving(): () => void {
    let arrived!: () => void
    const known = new Promise<void>((resolve) => (arrived = resolve))
    this.arriving.add(known)
    return () => {
      this.arriving.delete(known)
      arrived()
    }
  }

  private async start(body: unknown, {placed, signal, waitReady}: {placed: () => void; signal?: AbortSignal; waitReady: boolean}): Promise<{model_uid: string}> {
    if (this.closing) throw shuttingDown()
    const {engine, entry, parameters, spec, request} = this.resolveLaunch(body)
    const replicas = request.replica ?? 1
    const load = {family: entry.family, modelName: entry.family.model_name, modelType: entry.modelType, parameters, spec}
    const candidates = this.candidates(request.worker_ip ?? undefined)
    // With one candidate there is nothing to choose: its engine's own load error is the better answer. (No
    // await otherwise, so the launch is in the table as soon as this call returns its promise.)
    const need = candidates.length > 1 ? await this.memoryNeed(candidates[0], {engine: engine.name, load: {...load, modelUid: request.model_uid ?? entry.family.model_name}}, signal) : undefined
    if (this.closing) throw shuttingDown()
    const workers = this.choose(candidates, need, replicas, request.model_uid ?? entry.family.model_name)
    const uid = this.chooseUid(request.model_uid, request.model_name)
    const type = this.options.kernel.modelType(entry.modelType)!.definition
    const record: InstanceRecord = {
      abilities: entry.family.model_ability ?? type.defaultAbilities,
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
      replicas: workers.map((worker, index) => ({uid: replicas === 1 ? uid : `${uid}-rep${index}`, worker})),
      spec,
      status: 'launching',
      uid,
    }
    this.instances.set(uid, record)
    placed()
    this.ended.delete(uid)
    this.lost.delete(uid)
    this.options.log.info(`launching ${uid}: ${cacheEntryName(record.modelName, spec)} on ${engine.name}, on ${workers.map((w) => w.id).join(', ')}`)
    record.done = this.run(record, (replica) => ({
      engine: engine.name,
      load: {...load, modelUid: replica.uid},
      ...(replicas === 1 ? {} : {replicaOf: {modelUid: uid, replica: replicas}}),
    }))
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
    const progress = this.instances.get(uid)?.progress ?? this.ended.get(uid)
    if (!progress) this.require(uid)
    return {...progress!, files: progress!.files.map((file) => ({...file}))}
  }

  /** Cancels a launch in progress; answers once nothing of it is left (no process, no partial download). */
  async cancel(uid: string): Promise<void> {
    await this.arrivalOf(uid)
    const record = this.instances.get(uid)
    if (!record) {
      const ended = this.ended.get(uid)
      if (ended) throw conflict(`the launch of ${uid} has already ended (${ended.stage}); there is nothing to cancel.`, 'model_uid')
      this.require(uid)
      return
    }

    if (record.status !== 'launching')
      throw conflict(`model ${uid} is not launching (it is ${record.status}); stop it with \`servicectl terminate --model-uid ${uid}\` instead.`, 'model_uid')
    this.options.log.info(`cancelling the launch of ${uid}`)
    record.controller.abort()
    await record.done.catch(() => {})
  }

  /** Terminates a model; one still launching is cancelled. */
  async terminate(uid: string): Promise<void> {
    await this.arrivalOf(uid)
    const record = this.require(uid)
    if (record.status === 'launching') return this.cancel(uid)
    record.status = 'terminating'
    try {
      const results = await Promise.allSettled(record.replicas.map((replica) => replica.worker.terminate(replica.uid)))
      const failure = results.find((result) => result.status === 'rejected' && !(result.reason instanceof ServiceError && result.reason.status === 404))
      if (failure) throw (failure as PromiseRejectedResult).reason
    } finally {
      this.instances.delete(uid)
    }
  }

  /** Waits, when `uid` is not in the table, until the launches still arriving are in it (or failed). */
  private async arrivalOf(uid: string): Promise<void> {
    if (!this.instances.has(uid)) await Promise.all(this.arriving)
  }

  /** Every worker's cached model versions (optionally of one model), each with the worker that has it. */
  async cachedModels(modelName?: string): Promise<Array<CachedModel & {worker: string}>> {
    const lists = await Promise.all(this.ready().map(async (worker) => (await worker.cachedModels()).map((entry) => ({...entry, worker: worker.id}))))
    return lists.flat().filter((entry) => !modelName || entry.model_name === modelName)
  }

  /** Deletes a model version from every worker's cache that has it; answers the deleted paths. */
  async removeCachedModel(version: string): Promise<{model_version: string; paths: string[]}> {
    const holders = (await this.cachedModels()).filter((entry) => entry.model_version === version)
    if (holders.length === 0) throw notFound(`there is no cached model version named ${version}; \`servicectl cached\` lists them.`, 'not_found', 'model_version')
    const paths: string[] = []
    for (const worker of this.ready().filter((w) => holders.some((entry) => entry.worker === w.id))) paths.push(...(await worker.removeCachedModel(version)))
    return {model_version: version, paths}
  }

  /**
   * How much memory a launch with this body would need, from the GGUF header in the cache or on the hub.
   * `context_length` is the engine's n_ctx, as Xinference's cal-model-mem names it.
   */
  async estimateMemory(body: Record<string, unknown>, signal?: AbortSignal): Promise<WorkerMemoryEstimate & {model_version: string}> {
    const {context_length: contextLength, ...rest} = body
    const {engine, entry, parameters, spec} = this.resolveLaunch(contextLength === undefined ? rest : {...rest, n_ctx: contextLength}, {needsEstimator: true})
    const [worker] = this.ready()
    if (!worker) throw this.noWorker()
    const estimate = await worker.estimateMemory({engine: engine.name, load: {family: entry.family, modelName: entry.family.model_name, modelType: entry.modelType, modelUid: '', parameters, spec}}, signal)
    return {...estimate, model_version: cacheEntryName(entry.family.model_name, spec)}
  }

  private resolveLaunch(body: unknown, {needsEstimator = false} = {}) {
    const request = launchSchema.parse(body)
    const entry = this.options.registry.find(request.model_name, request.model_type)
    const engine = this.chooseEngine(entry.modelType, request.model_engine, needsEstimator)
    const size = request.size_in_billions ?? request.model_size_in_billions
    const spec = matchSpec(entry.family, engine, {
      hub: request.download_hub ?? this.options.defaultHub,
      model_format: request.model_format,
      quantization: request.quantization,
      size_in_billions: size === undefined ? undefined : String(size),
    })
    const parameters = engineParameters(engine, request)
    return {engine, entry, parameters, request, spec}
  }

  private async run(record: InstanceRecord, launchOf: (replica: Replica) => InstanceLaunch): Promise<void> {
    const {uid} = record
    try {
      const options = {onProgress: (step: LaunchStep) => this.advance(record, step), signal: record.controller.signal}
      const results = await Promise.allSettled(record.replicas.map((replica) => replica.worker.launch(launchOf(replica), options)))
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
    } catch (error) {
      // A failed launch leaves no stale uid behind; its cause goes back to the caller verbatim, and the
      // progress route keeps it for whoever launched without waiting.
      this.instances.delete(uid)
      const cancelled = record.controller.signal.aborted
      const shaped = error instanceof ServiceError ? error : new ServiceError(500, 'launch_failed', (error as Error).message)
      const reason = record.controller.signal.reason
      const final = cancelled
        ? reason instanceof ServiceError
          ? reason
          : new ServiceError(499, 'request_aborted', `the launch of ${uid} was cancelled.`)
        : shaped.code === 'launch_failed'
          ? new ServiceError(shaped.status, shaped.code, `failed to launch ${uid}: ${shaped.message}`)
          : shaped
      if (cancelled) this.options.log.info(`launch of ${uid} cancelled`)
      else this.options.log.error(`launch of ${uid} failed: ${shaped.message}`)
      record.progress = {...record.progress, error: {code: final.code, message: final.message, status: final.status}, stage: cancelled ? 'cancelled' : 'error'}
      this.ended.set(uid, record.progress)
      if (this.ended.size > ENDED_KEPT) this.ended.delete(this.ended.keys().next().value!)
      throw final
    }
  }

  /** Folds a worker's step into the launch's progress, which only moves forward. */
  private advance(record: InstanceRecord, step: LaunchStep) {
    const progress = record.progress
    let fraction: number
    if (step.stage === 'downloading') {
      if (progress.stage !== 'pending' && progress.stage !== 'downloading') return
      const {download} = step
      record.downloaded = true
      Object.assign(progress, {
        downloaded_bytes: download.downloadedBytes,
        files: download.files.map((file) => ({downloaded_bytes: file.downloadedBytes, name: file.name, total_bytes: file.totalBytes})),
        hub: download.hub,
        repo: download.repo,
        stage: 'downloading',
        total_bytes: download.totalBytes,
      })
      fraction = download.totalBytes > 0 ? (DOWNLOAD_SHARE * download.downloadedBytes) / download.totalBytes : 0
    } else if (step.stage === 'generating') {
      if (progress.stage !== 'pending') return
      progress.stage = 'generating'
      fraction = 0
    } else {
      progress.stage = 'loading'
      fraction = record.downloaded ? DOWNLOAD_SHARE + (1 - DOWNLOAD_SHARE) * step.fraction : step.fraction
    }

    // 1 means ready, which only the end of the launch says.
    progress.progress = Math.max(progress.progress, Math.min(fraction, 0.999))
  }

  /** Every running model's description, by uid (the `GET /v1/models` entries). */
  describeAll(): Array<Record<string, unknown>> {
    return this.sorted().map((record) => this.describe(record))
  }

  describeModel(uid: string): Record<string, unknown> {
    return this.describe(this.require(uid))
  }

  /** Marks a model whose process died on its own; requests to it get the same error until it is relaunched. */
  markCrashed(instanceUid: string, error: ServiceError) {
    const record = [...this.instances.values()].find((r) => r.replicas.some((replica) => replica.uid === instanceUid))
    if (!record || record.status !== 'ready') return
    // A replica that dies leaves the rotation; the model fails only when none is left.
    if (record.replicas.length > 1) {
      record.replicas = record.replicas.filter((replica) => replica.uid !== instanceUid)
      return
    }

    record.status = 'error'
    record.error = error
    record.progress = failedProgress(record.progress, error)
  }

  get(uid: string): ModelHandle {
    return this.handle(this.require(uid))
  }

  list(): ModelHandle[] {
    return this.sorted().map((record) => this.handle(record))
  }

  private sorted(): InstanceRecord[] {
    return [...this.instances.values()].sort((a, b) => a.uid.localeCompare(b.uid))
  }

  private handle(record: InstanceRecord): ModelHandle {
    const {uid} = record
    return {
      abilities: record.abilities,
      description: this.describe(record),
      invoke: (operation, payload, signal) => {
        if (record.status === 'error') throw record.error!
        if (record.status !== 'ready') throw new ServiceError(503, 'model_not_ready', `model ${uid} is ${record.status}; retry when it is ready.`)
        const replica = record.replicas[record.next++ % record.replicas.length]
        return replica.worker.invoke(replica.uid, operation, payload, signal)
      },
      modelName: record.modelName,
      modelType: record.modelType,
      uid,
    }
  }

  /**
   * Which engine can run which format, size and quantization of a model, in Xinference's
   * `GET /v1/engines/{model_name}` shape; an engine that cannot run here maps to the reason instead.
   */
  async engines(modelName: string, modelType?: string): Promise<Record<string, unknown>> {
    const entry = this.options.registry.find(modelName, modelType)
    const out: Record<string, unknown> = {}
    for (const engine of this.options.kernel.enginesFor(entry.modelType)) {
      const availability = (await engine.availability?.()) ?? true
      if (availability !== true) {
        out[engine.name] = availability
        continue
      }

      const groups = new Map<string, {model_name: string; model_format: string; model_size_in_billions: string; quantizations: string[]; model_hubs: string[]}>()
      for (const spec of flattenFamily(entry.family).filter((s) => engine.formats.includes(s.model_format))) {
        const key = `${spec.model_format}/${spec.model_size_in_billions}`
        const group = groups.get(key) ?? {model_format: spec.model_format, model_hubs: [], model_name: modelName, model_size_in_billions: spec.model_size_in_billions, quantizations: []}
        if (!group.quantizations.includes(spec.quantization)) group.quantizations.push(spec.quantization)
        if (!group.model_hubs.includes(spec.model_hub)) group.model_hubs.push(spec.model_hub)
        groups.set(key, group)
      }

      if (groups.size > 0) out[engine.name] = [...groups.values()]
    }

    return out
  }

  /**
   * Ordered shutdown: no launch starts any more, those in progress (downloading, loading) are cancelled and
   * leave nothing behind, then every instance's process is asked to free its model, and the workers go.
   */
  async dispose(): Promise<void> {
    this.closing = true
    const launching = [...this.instances.values()].filter((record) => record.status === 'launching')
    for (const record of launching) record.controller.abort(shuttingDown(`the launch of ${record.uid} was cancelled`))
    await Promise.all(launching.map((record) => record.done.catch(() => {})))
    await Promise.all([...this.workers.values()].map((worker) => worker.dispose()))
    this.instances.clear()
  }

  private require(uid: string): InstanceRecord {
    const record = this.instances.get(uid)
    if (!record) {
      const lost = this.lost.get(uid)
      if (lost) throw new ServiceError(503, 'worker_lost', lost)
      const running = [...this.instances.keys()]
      const ended = this.ended.get(uid)
      const why = ended?.error ? ` Its last launch ${ended.stage === 'cancelled' ? 'was cancelled' : `failed: ${ended.error.message}`}` : ''
      throw notFound(
        `model "${uid}" is not running.${why} ${running.length > 0 ? `Running models: ${running.join(', ')}.` : 'No model is running; launch one with `servicectl launch`.'}`,
        'model_not_found',
        'model',
      )
    }

    return record
  }

  private chooseEngine(modelType: string, requested: string | undefined, needsEstimator = false): EngineDefinition {
    const {kernel} = this.options
    const candidates = kernel.enginesFor(modelType).filter((engine) => !needsEstimator || engine.estimatorModule)
    const names = candidates.map((engine) => engine.name).join(', ') || '(none installed)'
    if (!requested) {
      if (modelType === 'LLM' && !needsEstimator) throw badRequest(`model_engine is required for LLM models; choose one of: ${names}.`, 'model_engine')
      if (candidates.length === 0) throw badRequest(`no engine for ${modelType} models is installed.`, 'model_engine')
      return candidates[0]
    }

    const engine = kernel.engine(requested)?.definition
    if (!engine || !engine.modelTypes.includes(modelType))
      throw badRequest(
        `model_engine "${requested}" ${engine ? `does not run ${modelType} models` : 'is not installed'}; choose one of: ${names}` +
          (engine ? '.' : ', or install its plugin with `servicectl plugins install`.'),
        'model_engine',
      )
    return engine
  }

  private chooseUid(requested: string | undefined, modelName: string): string {
    if (requested) {
      if (this.instances.has(requested))
        throw badRequest(`model_uid "${requested}" is already in use; terminate that model first or choose another uid.`, 'model_uid')
      return requested
    }

    // Like Xinference: the model name, or the name plus a short random suffix when that is taken.
    if (UID.test(modelName) && !this.instances.has(modelName)) return modelName
    let uid: string
    do uid = `${modelName.replaceAll(/[^\w.-]/g, '-').slice(0, 90)}-${randomBytes(4).toString('hex')}`
    while (this.instances.has(uid))
    return uid
  }

  /** Workers that answer, in a stable order. */
  private ready(): WorkerApi[] {
    return [...this.workers.values()].filter((worker) => worker.status().state === 'ready')
  }

  private noWorker() {
    const lost = [...this.workers.values()].map((worker) => worker.id)
    return new ServiceError(503, 'overloaded', `no worker is available${lost.length > 0 ? ` (lost: ${lost.join(', ')})` : ''}; start one with \`service-worker -e <supervisor endpoint> -H <worker host>\`.`)
  }

  /** The workers a launch may go to: those that answer, narrowed to the one `worker_ip` names. */
  private candidates(workerIp: string | undefined): WorkerApi[] {
    const ready = this.ready()
    if (ready.length === 0) throw this.noWorker()
    const named = workerIp ? ready.filter((worker) => matchesWorker(worker.status(), workerIp)) : ready
    if (named.length === 0)
      throw badRequest(`worker_ip ${workerIp} names no worker that answers; workers: ${ready.map((w) => `${w.id} (${w.status().address ?? 'local'})`).join(', ')}.`, 'worker_ip')
    return named
  }

  /**
   * Chooses a worker for each replica: among those named by `worker_ip` (else all), the ones with the memory
   * the model needs free, then the fewest replicas of this model, the fewest models, and the most memory free.
   * When none fits, the 503 says why for each worker.
   */
  private choose(named: WorkerApi[], need: number | undefined, replicas: number, uid: string): WorkerApi[] {
    const fits = need === undefined ? named : named.filter((worker) => worker.status().resources.memory_free_bytes >= need)
    if (fits.length === 0)
      throw new ServiceError(
        503,
        'overloaded',
        `no worker has the ${gib(need!)} ${uid} needs: ${named.map((w) => `${w.id} has ${gib(w.status().resources.memory_free_bytes)} free`).join('; ')}. Terminate a model, or launch with a smaller n_ctx or quantization.`,
      )
    const load = new Map(fits.map((worker) => [worker, this.sorted().filter((r) => r.replicas.some((replica) => replica.worker === worker)).length]))
    const chosen: WorkerApi[] = []
    const mine = (worker: WorkerApi) => chosen.filter((w) => w === worker).length
    for (let i = 0; i < replicas; i++) {
      // Replicas of this model spread first, so a lost worker takes as few of them as possible.
      const [best] = [...load.keys()].sort(
        (a, b) => mine(a) - mine(b) || load.get(a)! - load.get(b)! || b.status().resources.memory_free_bytes - a.status().resources.memory_free_bytes,
      )
      chosen.push(best)
      load.set(best, load.get(best)! + 1)
    }

    return chosen
  }

  /** Bytes a launch needs, from the engine's estimator when it has one; unknown (no check) when it cannot tell. */
  private async memoryNeed(worker: WorkerApi, launch: InstanceLaunch, signal?: AbortSignal): Promise<number | undefined> {
    if (!this.options.kernel.engine(launch.engine)?.definition.estimatorModule) return undefined
    try {
      return (await worker.estimateMemory(launch, signal)).total_bytes
    } catch (error) {
      this.options.log.debug(`no memory estimate for ${launch.load.modelUid}: ${(error as Error).message}`)
      return undefined
    }
  }

  private describe(record: InstanceRecord): Record<string, unknown> {
    const family = record.family as {model_lang?: unknown; language?: unknown; model_description?: unknown; context_length?: unknown; dimensions?: unknown; max_tokens?: unknown}
    // Embedding and rerank families say `language`, `dimensions` and `max_tokens` (Xinference's names); the engine's
    // own figures win, because they describe the file actually loaded.
    const dimensions = record.info.dimensions ?? family.dimensions
    const maxTokens = record.info.maxTokens ?? family.max_tokens
    return {
      id: record.uid,
      object: 'model',
      created: record.created,
      owned_by: 'service-toolkit',
      model_type: record.modelType,
      model_name: record.modelName,
      model_engine: record.engine,
      model_format: record.spec.model_format,
      model_size_in_billions: record.spec.model_size_in_billions,
      quantization: record.spec.quantization,
      model_hub: record.spec.model_hub,
      model_ability: record.abilities,
      model_lang: family.model_lang ?? family.language ?? [],
      model_description: family.model_description ?? '',
      context_length: record.contextLength ?? family.context_length ?? null,
      ...(dimensions === undefined ? {} : {dimensions}),
      ...(maxTokens === undefined ? {} : {max_tokens: maxTokens}),
      engine_parameters: record.parameters,
      replica: record.replica,
      status: record.status,
      worker: record.replicas.map((replica) => replica.worker.id).join(', '),
      replicas: record.replicas.map((replica) => ({model_uid: replica.uid, pid: replica.pid ?? null, worker: replica.worker.id})),
      pid: record.replicas[0]?.pid ?? null,
      ...(record.status === 'launching' ? {stage: record.progress.stage, progress: record.progress.progress} : {}),
      ...(record.error ? {error: record.error.message} : {}),
    }
  }
}

/** The answer to a launch the service's shutdown stopped, or one that came after it began. */
function shuttingDown(what = 'no model can be launched'): ServiceError {
  return new ServiceError(503, 'shutting_down', `${what}: the service is shutting down.`)
}

/** A model's progress once it has failed: the stage says so, with why. */
function failedProgress(progress: LaunchProgress, error: ServiceError): LaunchProgress {
  return {...progress, error: {code: error.code, message: error.message, status: error.status}, stage: 'error'}
}

/** `worker_ip` as Xinference clients send it: a worker's id, address, or the host part of its address. */
function matchesWorker(status: WorkerStatus, workerIp: string): boolean {
  if (status.id === workerIp || status.address === workerIp) return true
  try {
    return status.address !== null && new URL(status.address).hostname === workerIp
  } catch {
    return false
  }
}

/**
 * Everything in a launch request that is not a launch field is an engine parameter. Values arrive as JSON
 * or, from the CLI, as strings, so they are converted to the type the engine declares; an unknown name is
 * a 400 that lists the parameters the engine does take.
 */
export function engineParameters(engine: EngineDefinition, request: Record<string, unknown>): Record<string, unknown> {
  const known = new Set(Object.keys(launchSchema.json.properties as object))
  const out: Record<string, unknown> = {}
  for (const [name, raw] of Object.entries(request)) {
    // Launch fields (and the extra keys Xinference clients send) reach the engine only when it declares them.
    if (raw === null || raw === undefined || ((known.has(name) || CLIENT_KEYS.has(name)) && !engine.parameters[name])) continue
    const declared = engine.parameters[name]
    if (!declared) {
      const accepted = Object.keys(engine.parameters).sort().join(', ') || '(none)'
      throw badRequest(`unknown parameter "${name}" for engine ${engine.name}; it accepts: ${accepted}.`, name, 'unknown_parameter')
    }

    out[name] = coerce(name, declared, raw)
  }

  return out
}

function coerce(name: string, declared: EngineParameter, raw: unknown): unknown {
  let value = raw
  if (typeof raw === 'string' && declared.type !== 'string') {
    if (declared.type === 'boolean' && /^(true|false)$/i.test(raw)) value = raw.toLowerCase() === 'true'
    else if (declared.type !== 'boolean' && raw.trim() !== '' && Number.isFinite(Number(raw))) value = Number(raw)
  }

  const schema =
    declared.type === 'string'
      ? s.string({enum: declared.enum})
      : declared.type === 'boolean'
        ? s.boolean()
        : s.number({integer: declared.type === 'integer', maximum: declared.maximum, minimum: declared.minimum})
  return schema.parse(value, name)
}
