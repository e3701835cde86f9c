/**
 * Weights downloaded into the cache, or removed from it, by the model name a launch would use, without launching
 * anything: what Ollama's `/api/pull` and `/api/delete` do. A pull is resolved as a launch with the same fields would
 * be (catalogue entry, engine, spec, the caller's reach), so the cache holds exactly what that launch then loads.
 */
import type {LaunchRequest} from '../protocol/launch.js'
import type {ModelWeights, PullOptions} from '../protocol/services.js'
import type {LaunchCatalogue} from './launch-resolution.js'
import type {WorkerApi} from './worker.js'

import {ServiceError} from '../kernel/errors.js'
import {weightsVersion} from '../weights/store.js'
import {resolveLaunch} from './launch-resolution.js'

export class WeightsPull implements ModelWeights {
  constructor(
    private readonly catalogue: LaunchCatalogue,
    /** The workers of service-local (one); none in a cluster, whose workers download only for their launches. */
    private readonly workers: WorkerApi[],
  ) {}

  version(request: LaunchRequest, {authority}: Pick<PullOptions, 'authority'> = {}): string {
    const {entry, spec} = resolveLaunch(this.catalogue, request, {authority})
    return weightsVersion({family: entry.family, modelName: entry.family.model_name, spec})
  }

  pull(request: LaunchRequest, {authority, onProgress, signal}: PullOptions = {}): {model_version: string; done: Promise<void>} {
    const {engine, entry, parameters, spec} = resolveLaunch(this.catalogue, request, {authority})
    const worker = this.workers.find((candidate) => candidate.download)
    if (!worker?.download)
      throw new ServiceError(400, 'unsupported', 'a supervisor downloads no weights by itself: launch the model instead, and its worker downloads them.', 'model')
    const load = {family: entry.family, modelName: entry.family.model_name, modelType: entry.modelType, modelUid: '', parameters, spec}
    return {done: worker.download({engine: engine.name, load}, {onProgress, signal}), model_version: weightsVersion(load)}
  }
}
