/** The weights caches of a cluster seen as one: every worker's entries listed together, a removal done on each that holds it. */
import type {CachedModel} from '../protocol/cache.js'
import type {WorkerApi} from './worker.js'

import {notFound} from '../kernel/errors.js'

/** Every worker's cached model versions (optionally of one model), each with the worker that has it. */
export async function cachedModelsOf(workers: WorkerApi[], modelName?: string): Promise<Array<CachedModel & {worker: string; actor_ip_address: string}>> {
  // actor_ip_address: Xinference's name for the worker holding an entry, which its clients read.
  const lists = await Promise.all(workers.map(async (worker) => (await worker.cachedModels()).map((entry) => ({...entry, actor_ip_address: worker.id, worker: worker.id}))))
  return lists.flat().filter((entry) => !modelName || entry.model_name === modelName)
}

/** Deletes a model version from every worker's cache that has it; answers the deleted paths. */
export async function removeCachedModelFrom(workers: WorkerApi[], version: string): Promise<{model_version: string; paths: string[]}> {
  const holders = (await cachedModelsOf(workers)).filter((entry) => entry.model_version === version)
  if (holders.length === 0) throw notFound(`there is no cached model version named ${version}; \`servicectl cached\` lists them.`, 'not_found', 'model_version')
  const paths: string[] = []
  for (const worker of workers.filter((w) => holders.some((entry) => entry.worker === w.id))) paths.push(...(await worker.removeCachedModel(version)))
  return {model_version: version, paths}
}
