/**
 * Downloads the companion files a spec lists (see kernel/companions.ts) through the weight store, each as an entry of
 * its own, one after another with the launch's progress, and answers the launch parameters with their paths added: a
 * parameter the launch names itself is kept, and its companion is not downloaded.
 */
import type {ResolvedSpec} from '../kernel/catalogue.js'
import type {ResolveOptions, WeightStore} from './store.js'

import {companionSpec} from '../kernel/companions.js'

export async function withCompanions(store: WeightStore, spec: ResolvedSpec, parameters: Record<string, unknown>, options: ResolveOptions): Promise<Record<string, unknown>> {
  const paths: Record<string, string> = {}
  for (const companion of spec.companion_files ?? []) {
    if (parameters[companion.role] !== undefined && parameters[companion.role] !== null) continue
    paths[companion.role] = await store.resolve(companionSpec(spec, companion), options)
  }

  return {...paths, ...parameters}
}
