/**
 * Downloads the companion files a spec lists (see kernel/companions.ts) through the weight store, each as an entry of
 * its own, one after another with the launch's progress, and answers the launch parameters with their paths added: a
 * parameter the launch names itself is kept, and its companion is not downloaded.
 */
import type {ResolvedSpec} from '../kernel/catalogue.js'
import type {ResolveOptions, WeightStore} from './store.js'

import {companionSpec} from '../kernel/companions.js'
import {cacheEntryName} from './cache.js'

/** The companions a launch with these parameters downloads, each as the weight store fetches it. */
const wanted = (spec: ResolvedSpec, parameters: Record<string, unknown>) =>
  (spec.companion_files ?? []).filter(({role}) => parameters[role] === undefined || parameters[role] === null).map((companion) => ({role: companion.role, ...companionSpec(spec, companion)}))

/** The cache entries (model versions) a launch with these parameters uses for its companions. */
export function companionVersions(spec: ResolvedSpec, parameters: Record<string, unknown>): string[] {
  return wanted(spec, parameters).map((companion) => cacheEntryName(companion.modelName, companion.spec))
}

export async function withCompanions(store: WeightStore, spec: ResolvedSpec, parameters: Record<string, unknown>, options: ResolveOptions): Promise<Record<string, unknown>> {
  const paths: Record<string, string> = {}
  for (const {role, ...companion} of wanted(spec, parameters)) paths[role] = await store.resolve(companion, options)
  return {...paths, ...parameters}
}
