/**
 * Models and engines described in Xinference's shapes: a running model as `GET /v1/models` lists it, and which
 * engine runs which format, size and quantization of a model (`GET /v1/engines/{model_name}`).
 */
import type {WorkerFacts} from '../kernel/contracts.js'
import type {Kernel} from '../kernel/kernel.js'
import type {ModelRegistry} from '../kernel/registry.js'
import type {ModelDescription} from '../protocol/models.js'
import type {EngineSpecGroup} from '../protocol/registrations.js'
import type {InstanceRecord} from './model-table.js'

import {flattenFamily} from '../kernel/catalogue.js'
import {anyMachine, fitOnWorkers, machineFits} from './engine-fit.js'

export function describeRecord(record: InstanceRecord): ModelDescription {
  const family = record.family as {model_lang?: unknown; language?: unknown; model_description?: unknown; model_family?: unknown; context_length?: unknown; dimensions?: unknown; max_tokens?: unknown}
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
    // Xinference's clients read both: Dify picks an audio model's voices by its family, which families without one share with their name.
    model_family: typeof family.model_family === 'string' ? family.model_family : record.modelName,
    revision: record.spec.model_revision,
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
    ...(record.healing ? {last_error: record.healing.lastError ?? null, restarts: record.healing.restarts} : {}),
  }
}

/**
 * Which engine can run which format, size and quantization of a model, in Xinference's
 * `GET /v1/engines/{model_name}` shape; an engine that cannot run here maps to the reason instead, when it has
 * formats of the model (one that runs none of them is left out either way). Each group of specs says whether any of
 * the workers can run it (`available`), and if not, why (`reason`, see engine-fit.ts); groups that differ in that
 * are listed apart.
 */
export async function describeEngines(kernel: Kernel, registry: ModelRegistry, workers: WorkerFacts[], modelName: string, modelType?: string): Promise<Record<string, unknown>> {
  const entry = registry.find(modelName, modelType)
  const out: Record<string, unknown> = {}
  for (const engine of kernel.enginesFor(entry.modelType)) {
    const specs = flattenFamily(entry.family).filter((s) => engine.formats.includes(s.model_format))
    if (specs.length === 0) continue
    const machines = await machineFits(engine, workers)
    const availability = anyMachine(machines, workers)
    if (availability !== true) {
      out[engine.name] = availability
      continue
    }

    // A quantization is available when one of its hubs' specs is; the first's reason stands for all of them.
    const fits = new Map<string, true | string>()
    for (const spec of specs) {
      const key = `${spec.model_format}/${spec.model_size_in_billions}/${spec.quantization}`
      if (fits.get(key) === true) continue
      // The family's own name, as a launch's refusal gives it.
      const fit = fitOnWorkers(engine, {modelName: entry.family.model_name, spec}, workers, machines)
      if (fit === true || !fits.has(key)) fits.set(key, fit)
    }

    const groups = new Map<string, EngineSpecGroup & {model_hubs: string[]}>()
    for (const spec of specs) {
      const fit = fits.get(`${spec.model_format}/${spec.model_size_in_billions}/${spec.quantization}`)!
      const key = `${spec.model_format}/${spec.model_size_in_billions}/${fit}`
      const group = groups.get(key) ?? {available: fit === true, model_format: spec.model_format, model_hubs: [], model_name: modelName, model_size_in_billions: spec.model_size_in_billions, quantizations: [], ...(fit === true ? {} : {reason: fit})}
      if (!group.quantizations.includes(spec.quantization)) group.quantizations.push(spec.quantization)
      if (!group.model_hubs.includes(spec.model_hub)) group.model_hubs.push(spec.model_hub)
      groups.set(key, group)
    }

    out[engine.name] = [...groups.values()]
  }

  return out
}
