/**
 * What a launch runs: the catalogue entry its model name (and type) finds, the engine that runs it, the spec that
 * engine can load for the requested format, size, quantization and hub, and the engine parameters converted to
 * the types the engine declares.
 */
import type {EngineDefinition, Logger} from '../kernel/contracts.js'
import type {Kernel} from '../kernel/kernel.js'
import type {CatalogueEntry, ModelRegistry} from '../kernel/registry.js'
import type {LaunchRequest} from '../protocol/launch.js'
import type {InstanceLaunch} from '../protocol/worker.js'
import type {WorkerApi} from './worker.js'

import {flattenFamily, matchSpec, type ResolvedSpec, type SpecQuery} from '../kernel/catalogue.js'
import {badRequest, ServiceError} from '../kernel/errors.js'
import {type Authority, checkLaunchReach, NO_ALLOW_LISTS, NO_AUTHORITY, type ReachSettings} from '../kernel/reach.js'
import {engineParameters} from '../protocol/engine-parameters.js'

export interface ResolvedLaunch {
  engine: EngineDefinition
  entry: CatalogueEntry
  parameters: Record<string, unknown>
  spec: ResolvedSpec
}

export interface LaunchCatalogue {
  kernel: Kernel
  registry: ModelRegistry
  /** Hub used when a launch names none (SERVICE_MODEL_SRC). */
  defaultHub?: string
  /** The operator's allow-lists for what launches may run and read; none when absent. */
  reach?: ReachSettings
}

/**
 * Resolves a launch; `needsEstimator` keeps to the engines that can estimate memory (for `POST /v1/models/memory`).
 * What the launch makes the service run or read is checked against `authority`, the caller's, before anything else.
 */
export function resolveLaunch(
  {defaultHub, kernel, reach = NO_ALLOW_LISTS, registry}: LaunchCatalogue,
  request: LaunchRequest,
  {authority = NO_AUTHORITY, needsEstimator = false}: {authority?: Authority; needsEstimator?: boolean} = {},
): ResolvedLaunch {
  const entry = registry.find(request.model_name, request.model_type)
  const engine = chooseEngine(kernel, entry, request.model_engine, needsEstimator)
  const size = request.size_in_billions ?? request.model_size_in_billions
  const query: SpecQuery = {
    hub: request.download_hub ?? defaultHub,
    model_format: request.model_format,
    quantization: request.quantization,
    size_in_billions: size === undefined ? undefined : String(size),
  }
  checkLaunchReach(request, engine, authority, reach)
  let spec: ResolvedSpec
  try {
    spec = matchSpec(entry.family, engine, query)
  } catch (error) {
    throw withEnginesThatCan(error, kernel.enginesFor(entry.modelType), entry, query)
  }

  return {engine, entry, parameters: engineParameters(engine, request), spec}
}

/**
 * A spec the chosen engine cannot run (its format, or its size or quantization among the engine's formats) is
 * refused naming the engines that can run what was asked for (in alphabetical order, whatever order the plugins
 * loaded in), so the person can pick one instead of guessing.
 */
function withEnginesThatCan(error: unknown, engines: EngineDefinition[], entry: CatalogueEntry, query: SpecQuery): unknown {
  if (!(error instanceof ServiceError) || error.status !== 400) return error
  const able = engines.filter((engine) => {
    try {
      matchSpec(entry.family, engine, query)
      return true
    } catch {
      return false
    }
  })
  if (able.length === 0) return error
  return badRequest(`${error.message.replace(/\.$/, '')}; the engines that can run it: ${able.map((engine) => engine.name).sort((x, y) => x.localeCompare(y)).join(', ')}.`, error.param ?? undefined)
}

/**
 * The requested engine, or else the first one installed for the model's type that runs one of its formats (a flexible
 * ONNX model and a Python one have different engines), falling back to the first of its type so a mismatch is named.
 */
function chooseEngine(kernel: Kernel, {family, modelType}: CatalogueEntry, requested: string | undefined, needsEstimator: boolean): EngineDefinition {
  const candidates = kernel.enginesFor(modelType).filter((engine) => !needsEstimator || engine.estimatorModule)
  const names = candidates.map((engine) => engine.name).join(', ') || '(none installed)'
  if (!requested) {
    if (modelType === 'LLM' && !needsEstimator) throw badRequest(`model_engine is required for LLM models; choose one of: ${names}.`, 'model_engine')
    if (candidates.length === 0) throw badRequest(`no engine for ${modelType} models is installed.`, 'model_engine')
    const formats = new Set(flattenFamily(family).map((spec) => spec.model_format))
    const running = candidates.find((engine) => engine.formats.some((format) => formats.has(format)))
    if (running) return running
    // An estimating engine that cannot run the model would only be refused for its format, which misleads: the
    // engines that can run it make no estimate.
    if (needsEstimator && formats.size > 0)
      throw badRequest(
        `${family.model_name} cannot be estimated: estimates are read from the weights that ${names} run, and its weights are ${[...formats].join(', ')}; once launched, its process's memory is on /metrics (service_model_process_resident_memory_bytes).`,
        'model_name',
      )
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

/** Bytes a launch needs, from the engine's estimator when it has one; unknown (no check) when it cannot tell. */
export async function memoryNeed({kernel, log}: {kernel: Kernel; log: Logger}, worker: WorkerApi, launch: InstanceLaunch, signal?: AbortSignal): Promise<number | undefined> {
  if (!kernel.engine(launch.engine)?.definition.estimatorModule) return undefined
  try {
    return (await worker.estimateMemory(launch, signal)).total_bytes
  } catch (error) {
    log.debug(`no memory estimate for ${launch.load.modelUid}: ${(error as Error).message}`)
    return undefined
  }
}
