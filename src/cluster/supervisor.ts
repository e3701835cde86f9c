/**
 * The supervisor owns the table of running models: it validates launches against the catalogue and the
 * engines, places each instance on a worker, routes requests to it and reports its state. Workers are
 * reached only through `WorkerApi`, so local mode (one in-process worker) and cluster mode share this code.
 */
import {randomBytes} from 'node:crypto'

import type {EngineDefinition, EngineParameter, LoadedModelInfo, Logger, ModelDirectory, ModelHandle} from '../kernel/contracts.js'
import type {Kernel} from '../kernel/kernel.js'
import type {ModelRegistry} from '../kernel/registry.js'
import type {WorkerApi} from './worker.js'

import {flattenFamily, matchSpec, type ResolvedSpec} from '../kernel/catalogue.js'
import {badRequest, notFound, ServiceError} from '../kernel/errors.js'
import * as s from '../kernel/schema.js'

const UID = /^[A-Za-z0-9][\w.-]{0,99}$/
const SIZE = s.union([s.string({minLength: 1}), s.number({minimum: 0})], 'a size in billions such as "0_5" or 7')

export const launchSchema = s.object(
  {
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
  },
  {description: 'Launch fields; any other field is an engine parameter (n_ctx, n_parallel, …).', title: 'LaunchRequest', unknownKeys: 'keep'},
)

export type LaunchRequest = s.Infer<typeof launchSchema>

/** Keys Xinference clients send with every launch, often as null, that are not engine parameters here. */
const CLIENT_KEYS = new Set(['gpu_idx', 'peft_model_config', 'request_limits', 'worker_ip', 'enable_virtual_env', 'virtual_env_packages', 'envs', 'model_path'])

export type ModelStatus = 'launching' | 'ready' | 'error' | 'terminating'

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
  private readonly now: () => number

  constructor(private readonly options: SupervisorOptions) {
    this.now = options.now ?? (() => Math.floor(Date.now() / 1000))
  }

  async launch(body: unknown, signal?: AbortSignal): Promise<{model_uid: string}> {
    const request = launchSchema.parse(body)
    const {kernel, registry} = this.options
    const entry = registry.find(request.model_name, request.model_type)
    const engine = this.chooseEngine(entry.modelType, request.model_engine)
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
    const uid = this.chooseUid(request.model_uid, request.model_name)
    const type = kernel.modelType(entry.modelType)!.definition
    const record: InstanceRecord = {
      abilities: entry.family.model_ability ?? type.defaultAbilities,
      created: this.now(),
      engine: engine.name,
      family: entry.family,
      info: {},
      modelName: entry.family.model_name,
      modelType: entry.modelType,
      parameters,
      spec,
      status: 'launching',
      uid,
      worker: this.placeOn(),
    }
    this.instances.set(uid, record)
    this.options.log.info(`launching ${uid}: ${record.modelName} ${spec.model_format} ${spec.model_size_in_billions}B ${spec.quantization} on ${engine.name}`)
    try {
      const summary = await record.worker.launch(
        {engine: engine.name, load: {family: entry.family, modelName: record.modelName, modelType: record.modelType, modelUid: uid, parameters, spec}},
        signal,
      )
      record.status = 'ready'
      record.pid = summary.pid
      record.info = summary.info
      record.contextLength = typeof summary.info.contextLength === 'number' ? summary.info.contextLength : undefined
      if (Array.isArray(summary.info.abilities)) record.abilities = summary.info.abilities as string[]
    } catch (error) {
      // A failed launch leaves no stale uid behind; its cause goes back to the caller verbatim.
      this.instances.delete(uid)
      const shaped = error instanceof ServiceError ? error : new ServiceError(500, 'launch_failed', (error as Error).message)
      this.options.log.error(`launch of ${uid} failed: ${shaped.message}`)
      throw shaped.code === 'launch_failed' ? new ServiceError(shaped.status, shaped.code, `failed to launch ${uid}: ${shaped.message}`) : shaped
    }

    return {model_uid: uid}
  }

  async terminate(uid: string): Promise<void> {
    const record = this.require(uid)
    if (record.status === 'launching') throw new ServiceError(409, 'conflict', `model ${uid} is still launching; wait until it is ready, then terminate it.`)
    record.status = 'terminating'
    try {
      await record.worker.terminate(uid)
    } catch (error) {
      if (!(error instanceof ServiceError && error.status === 404)) throw error
    } finally {
      this.instances.delete(uid)
    }
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
      throw notFound(
        `model "${uid}" is not running. ${running.length > 0 ? `Running models: ${running.join(', ')}.` : 'No model is running; launch one with `servicectl launch`.'}`,
        'model_not_found',
        'model',
      )
    }

    return record
  }

  private chooseEngine(modelType: string, requested: string | undefined): EngineDefinition {
    const {kernel} = this.options
    const candidates = kernel.enginesFor(modelType)
    const names = candidates.map((engine) => engine.name).join(', ') || '(none installed)'
    if (!requested) {
      if (modelType === 'LLM') throw badRequest(`model_engine is required for LLM models; choose one of: ${names}.`, 'model_engine')
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
