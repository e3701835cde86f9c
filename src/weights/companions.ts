/**
 * Downloads the companion files a spec lists (see kernel/companions.ts) through the weight store, each as an entry of
 * its own, one after another with the launch's progress, and answers the launch parameters with their paths added: a
 * parameter the launch names itself is kept, and its companion is not downloaded. For a memory estimate, each one's
 * size, from the cache or the hub's metadata, without downloading it.
 */
import {stat} from 'node:fs/promises'

import type {ResolvedSpec} from '../kernel/catalogue.js'
import type {ResolveOptions, WeightStore} from './store.js'

import {companionSpec} from '../kernel/companions.js'
import {cacheEntryName} from './cache.js'

/** The companions a launch with these parameters downloads, each as the weight store fetches it. */
const wanted = (spec: ResolvedSpec, parameters: Record<string, unknown>) =>
  (spec.companion_files ?? []).filter(({role}) => parameters[role] === undefined || parameters[role] === null).map((companion) => ({...companion, ...companionSpec(spec, companion)}))

/** The cache entries (model versions) a launch with these parameters uses for its companions. */
export function companionVersions(spec: ResolvedSpec, parameters: Record<string, unknown>): string[] {
  return wanted(spec, parameters).map((companion) => cacheEntryName(companion.modelName, companion.spec))
}

export async function withCompanions(store: WeightStore, spec: ResolvedSpec, parameters: Record<string, unknown>, options: ResolveOptions): Promise<Record<string, unknown>> {
  const paths: Record<string, string> = {}
  for (const {modelName, role, spec: fileSpec} of wanted(spec, parameters)) paths[role] = await store.resolve({modelName, spec: fileSpec}, options)
  return {...paths, ...parameters}
}

/** A companion file in a memory estimate: its size and where that came from, or why it is unknown. */
export interface CompanionSize {
  role: string
  model_id: string
  file_name: string
  bytes?: number
  /** `cache`, `local`, or the hub whose metadata gave the size. */
  source?: string
  error?: string
}

/** The size of each companion a launch with these parameters would download; nothing is downloaded. */
export async function companionSizes(store: WeightStore, spec: ResolvedSpec, parameters: Record<string, unknown>, signal?: AbortSignal): Promise<CompanionSize[]> {
  return Promise.all(
    wanted(spec, parameters).map(async ({file_name, model_id, modelName, role, spec: fileSpec}) => {
      const companion = {file_name, model_id, role}
      try {
        const location = await store.locate({modelName, spec: fileSpec}, signal)
        const sizes = location.sizes ?? (await Promise.all(location.files.map(async (file) => (await stat(file)).size)))
        return {...companion, bytes: sizes.reduce((sum, size) => sum + size, 0), source: location.source}
      } catch (error) {
        // An estimate whose caller went away ends; only a size the hub cannot tell is reported as unknown.
        if (signal?.aborted) throw error
        return {...companion, error: (error as Error).message}
      }
    }),
  )
}

/** An estimate with the companions' known bytes added to its weights and total, and the companions listed. */
export function withCompanionSizes<Estimate extends {weights_bytes: number; total_bytes: number}>(estimate: Estimate, companions: CompanionSize[]): Estimate & {companion_files?: CompanionSize[]} {
  if (companions.length === 0) return estimate
  const bytes = companions.reduce((sum, companion) => sum + (companion.bytes ?? 0), 0)
  return {...estimate, companion_files: companions, total_bytes: estimate.total_bytes + bytes, weights_bytes: estimate.weights_bytes + bytes}
}
