/**
 * The supervisor owns the table of running models: it validates launches against the catalogue and the
 * engines, places each instance on a worker, routes requests to it and reports its state. Workers are
 * reached only through `WorkerApi`, so local mode (one in-process worker) and cluster mode share this code.
 */
import {randomBytes} from 'node:crypto'

import type {EngineDefinition, EngineParameter, LoadedModelInfo, Logger, ModelDirectory, ModelHandle} from '../kernel/contracts.js'
import type {Kernel} from '../kernel/kernel.js'
import type {ModelRegistry} from '../kernel/registry.js'
import type {InstanceLaunch, LaunchStep, WorkerApi, WorkerMemoryEstimate} from './worker.js'

import {flattenFamily, matchSpec, type ResolvedSpec} from '../kernel/catalogue.js'
import {badRequest, conflict, notFound, ServiceError} from '../kernel/errors.js'
import * as s from '../kernel/schema.js'
import {cacheEntryName, type CachedModel} from './hub/cache.js'

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
  replica: s.optional(s.integer({description: 'Number of instances; more than 1 needs cluster mode.', minimum: 1})),
  size_in_billions: s.optional(SIZE),
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
const CLIENT_KEYS = new Set(['gpu_idx', 'peft_model_config', 'request_limits', 'worker_ip', 'enable_virtual_env', 'virtual_env_packages', 'envs', 'model_path'])

export type ModelStatus = 'launching' | 'ready' | 'error' | 'terminating'

/** pending → downloading (only when the weights are not cached) → loading → ready; or error / cancelled. */
export type LaunchStage = 'pending' | 'downloading' | 'loading' | 'ready' | 'error' | 'cancelled'

export interface LaunchProgress {
  model_uid: string
  stage: LaunchStage
  /** The whole launch, from 0 to 1; it never goes back, and is 1 exactly when the model is ready. */
  progress: number
  downloaded_bytes: number
  total_bytes: number
  files: Array<{name: string; downloaded_bytes: number; total_bytes: number}>
  hub: string | null
  repo: string | null
  /** Why the launch failed or was cancelled. */
  error: {message: string; code: string; status: number} | null
}

/** Of a launch that downloads, the share of its progress that is the download; loading is the rest. */
const DOWNLOAD_SHARE = 0.9
/** Failed and cancelled launches whose outcome the progress route still answers. */
const ENDED_KEPT = 100

interface InstanceRecord {
  uid: string
  modelType: string
  modelName: string
  engine: string
  spec: ResolvedSpec
  abilities: string[]
  family: Record<string, unknown>
  parameters: Record<string, unknown>
  worker: WorkerApi
  status: ModelStatus
  error?: ServiceError
  created: number
  contextLength?: number
  /** What the engine reported when the model loaded. */
  info: LoadedModelInfo
  pid?: number
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
  /** The last progress of launches that failed or were cancelled, by uid; their uids are free again. */
  private readonly ended = new Map<string, LaunchProgress>()
  private readonly now: () => number

  constructor(private readonly options: SupervisorOptions) {
    this.now = options.now ?? (() => Math.floor(Date.now() / 1000))
  }

  /**
   * Validates a launch and starts it. With `waitReady` (the default, as in Xinference) it answers once the
   * model is ready, and a caller that goes away cancels the launch; without, it answers the uid at once and
   * the launch goes on, followed through `progress(uid)`.
   */
  async launch(body: unknown, {signal, waitReady = true}: {signal?: AbortSignal; waitReady?: boolean} = {}): Promise<{model_uid: string}> {
    const {engine, entry, parameters, spec, request} = this.resolveLaunch(body)
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
      parameters,
      progress: {downloaded_bytes: 0, error: null, files: [], hub: spec.model_uri ? null : spec.model_hub, model_uid: uid, progress: 0, repo: spec.model_id, stage: 'pending', total_bytes: 0},
      spec,
      status: 'launching',
      uid,
      worker: this.placeOn(),
    }
    this.instances.set(uid, record)
    this.ended.delete(uid)
    this.options.log.info(`launching ${uid}: ${cacheEntryName(record.modelName, spec)} on ${engine.name}`)
    record.done = this.run(record, {engine: engine.name, load: {family: entry.family, modelName: record.modelName, modelType: record.modelType, modelUid: uid, parameters, spec}})
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
    const record = this.require(uid)
    if (record.status === 'launching') return this.cancel(uid)
    record.status = 'terminating'
    try {
      await record.worker.terminate(uid)
    } catch (error) {
      if (!(error instanceof ServiceError && error.status === 404)) throw error
    } finally {
      this.instances.delete(uid)
    }
  }

  /** Every worker's cached model versions (optionally of one model), each with the worker that has it. */
  async cachedModels(modelName?: string): Promise<Array<CachedModel & {worker: string}>> {
    const lists = await Promise.all(this.options.workers.map(async (worker) => (await worker.cachedModels()).map((entry) => ({...entry, worker: worker.id}))))
    return lists.flat().filter((entry) => !modelName || entry.model_name === modelName)
  }

  /** Deletes a model version from every worker's cache that has it; answers the deleted paths. */
  async removeCachedModel(version: string): Promise<{model_version: string; paths: string[]}> {
    const holders = (await this.cachedModels()).filter((entry) => entry.model_version === version)
    if (holders.length === 0) throw notFound(`there is no cached model version named ${version}; \`servicectl cached\` lists them.`, 'not_found', 'model_version')
    const paths: string[] = []
    for (const worker of this.options.workers.filter((w) => holders.some((entry) => entry.worker === w.id))) paths.push(...(await worker.removeCachedModel(version)))
    return {model_version: version, paths}
  }

  /**
   * How much memory a launch with this body would need, from the GGUF header in the cache or on the hub.
   * `context_length` is the engine's n_ctx, as Xinference's cal-model-mem names it.
   */
  async estimateMemory(body: Record<string, unknown>, signal?: AbortSignal): Promise<WorkerMemoryEstimate & {model_version: string}> {
    const {context_length: contextLength, ...rest} = body
    const {engine, entry, parameters, spec} = this.resolveLaunch(contextLength === undefined ? rest : {...rest, n_ctx: contextLength}, {needsEstimator: true})
    const estimate = await this.placeOn().estimateMemory({engine: engine.name, load: {family: entry.family, modelName: entry.family.model_name, modelType: entry.modelType, modelUid: '', parameters, spec}}, signal)
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
    if ((request.replica ?? 1) > 1)
      throw badRequest('replica > 1 needs a cluster with several workers; launch with replica 1 in local mode.', 'replica')
    return {engine, entry, parameters, request, spec}
  }

  private async run(record: InstanceRecord, launch: InstanceLaunch): Promise<void> {
    const {uid} = record
    try {
      const summary = await record.worker.launch(launch, {onProgress: (step) => this.advance(record, step), signal: record.controller.signal})
      record.status = 'ready'
      record.pid = summary.pid
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
      const final = cancelled
        ? new ServiceError(499, 'request_aborted', `the launch of ${uid} was cancelled.`)
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
  markCrashed(uid: string, error: ServiceError) {
    const record = this.instances.get(uid)
    if (!record || record.status !== 'ready') return
    record.status = 'error'
    record.error = error
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
        return record.worker.invoke(uid, operation, payload, signal)
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

  /** Ordered shutdown: every instance's process is asked to free its model, then the workers go. */
  async dispose(): Promise<void> {
    await Promise.all(this.options.workers.map((worker) => worker.dispose()))
    this.instances.clear()
  }

  private require(uid: string): InstanceRecord {
    const record = this.instances.get(uid)
    if (!record) {
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

  private placeOn(): WorkerApi {
    const [worker] = [...this.options.workers].sort((a, b) => a.instances().length - b.instances().length)
    if (!worker) throw new ServiceError(503, 'overloaded', 'no worker is available to run the model.')
    return worker
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
      replica: 1,
      status: record.status,
      worker: record.worker.id,
      pid: record.pid ?? null,
      ...(record.status === 'launching' ? {stage: record.progress.stage, progress: record.progress.progress} : {}),
      ...(record.error ? {error: record.error.message} : {}),
    }
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
  if (request.n_gpu !== undefined && engine.parameters.n_gpu) out.n_gpu = request.n_gpu
  for (const [name, raw] of Object.entries(request)) {
    if (known.has(name) || raw === null || raw === undefined || (CLIENT_KEYS.has(name) && !engine.parameters[name])) continue
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
