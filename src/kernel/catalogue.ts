/**
 * Catalogue entries use Xinference's v2 family format (model_name, model_specs with per-hub `model_src`, or the
 * flattened specs of a custom registration) so that users can copy their registrations over unchanged.
 * Everything here is pure: reading a family from JSON, flattening it into launchable specs and matching a launch
 * request against them.
 */
import type {CompanionFile} from './companions.js'

import {badRequest} from './errors.js'
import {checkNesting} from './schema.js'

export interface HubSource {
  model_id?: string
  model_revision?: string | null
  quantizations?: string[]
  model_file_name_template?: string
  model_file_name_split_template?: string | null
  quantization_parts?: Record<string, string[]> | null
  model_uri?: string | null
  /** Files from other repositories of the hub that the model needs beside its own (see companions.ts). */
  companion_files?: CompanionFile[]
}

export interface FamilySpec extends HubSource {
  model_format: string
  /** Absent for embedding and rerank models, which Xinference does not size; they flatten to size `none`. */
  model_size_in_billions?: number | string
  model_src?: Record<string, HubSource>
  /** Flattened (custom registration) form: one quantization per spec. */
  quantization?: string
  model_hub?: string
}

export interface ModelFamily {
  model_name: string
  model_specs?: FamilySpec[]
  model_ability?: string[]
  model_description?: string
  model_lang?: string[]
  context_length?: number
  chat_template?: string | null
  stop?: string[]
  stop_token_ids?: number[]
  [field: string]: unknown
}

/** One launchable combination: a format, size and quantization, from one hub or a local file. */
export interface ResolvedSpec {
  model_format: string
  model_size_in_billions: string
  quantization: string
  model_hub: string
  model_id: string | null
  model_revision: string | null
  /** `file:///…` for local weights (custom registrations). */
  model_uri: string | null
  model_file_name_template: string | null
  model_file_name_split_template: string | null
  quantization_parts: string[] | null
  /** Files from other repositories of the hub that the engine needs beside these weights (see companions.ts). */
  companion_files?: CompanionFile[]
}

/**
 * The hub of specs whose weights are made on this machine by the engine plugin's generator for their format (see
 * `WeightsGenerator`); their `model_id` names the recipe. Nothing is downloaded for them.
 */
export const GENERATED_HUB = 'generated'

/** The size of specs that give none, as `none` is the quantization of specs that have none. */
export const NO_SIZE = 'none'

/** Sizes are written `0_5` by Xinference and its users, `0.5` by others; both mean the same model. */
export function normalizeSize(size: number | string): string {
  const text = String(size).trim().replace('.', '_')
  if (!/^\d+(_\d+)?$/.test(text)) throw badRequest('a model size must be a number of billions, such as 7 or 0_5.', 'size_in_billions')
  const [whole, fraction] = text.split('_')
  const trimmed = fraction?.replace(/0+$/, '')
  return trimmed ? `${Number(whole)}_${trimmed}` : String(Number(whole))
}

/**
 * A family from JSON text. A mistake is located but never quoted: the text may be anything, such as the content
 * of a file that was never meant to be a registration.
 */
export function parseFamily(text: string, what: string, param?: string): ModelFamily {
  let family: ModelFamily
  try {
    family = JSON.parse(text) as ModelFamily
  } catch (error) {
    const at = /at position \d+ \((line \d+ column \d+)\)/.exec((error as Error).message)?.[1]
    throw badRequest(`${what} is not valid JSON${at ? ` (the mistake is at ${at})` : ''}.`, param)
  }

  checkNesting(family, param ?? what)
  return family
}

export function flattenFamily(family: ModelFamily): ResolvedSpec[] {
  const out: ResolvedSpec[] = []
  for (const spec of family.model_specs ?? []) {
    const size = spec.model_size_in_billions === undefined ? NO_SIZE : normalizeSize(spec.model_size_in_billions)
    const sources: Array<[string, HubSource]> = spec.model_src
      ? Object.entries(spec.model_src)
      : [[spec.model_hub ?? (spec.model_uri ? 'local' : 'huggingface'), spec]]
    for (const [hub, source] of sources) {
      const quantizations = spec.quantization ? [spec.quantization] : source.quantizations?.length ? source.quantizations : ['none']
      for (const quantization of quantizations) {
        out.push({
          model_file_name_split_template: source.model_file_name_split_template ?? null,
          model_file_name_template: source.model_file_name_template ?? null,
          model_format: spec.model_format,
          model_hub: hub,
          model_id: source.model_id?.replaceAll('{quantization}', quantization) ?? null,
          model_revision: source.model_revision ?? null,
          model_size_in_billions: size,
          model_uri: source.model_uri ?? spec.model_uri ?? null,
          quantization,
          quantization_parts: source.quantization_parts?.[quantization] ?? null,
          ...(source.companion_files ? {companion_files: source.companion_files} : {}),
        })
      }
    }
  }

  return out
}

export interface SpecQuery {
  model_format?: string
  size_in_billions?: string
  quantization?: string
  /** Preferred hub; local files always qualify and Hugging Face is the fallback, as in Xinference. */
  hub?: string
}

const unique = (values: string[]) => [...new Set(values)]
const listOf = (values: string[]) => (values.length > 0 ? unique(values).join(', ') : '(none)')

/**
 * Narrows the family's specs step by step (engine → format → size → quantization) so that a mismatch is
 * reported on the first field that rules everything out, with the values that field could take.
 */
export function matchSpec(
  family: ModelFamily,
  engine: {name: string; formats: readonly string[]},
  query: SpecQuery,
): ResolvedSpec {
  const all = flattenFamily(family)
  const preferredHub = query.hub ?? 'huggingface'
  const hubRank = (spec: ResolvedSpec) =>
    spec.model_uri ? 0 : spec.model_hub === preferredHub ? 1 : spec.model_hub === 'huggingface' ? 2 : 3
  let candidates = all.filter((spec) => engine.formats.includes(spec.model_format))
  if (candidates.length === 0) {
    throw badRequest(
      `engine "${engine.name}" cannot run ${family.model_name}: it runs the formats ${listOf([...engine.formats])}, and the model comes as ${listOf(all.map((s) => s.model_format))}.`,
      'model_engine',
    )
  }

  if (query.model_format) {
    const wanted = query.model_format.toLowerCase()
    const next = candidates.filter((spec) => spec.model_format.toLowerCase() === wanted)
    if (next.length === 0)
      throw badRequest(
        `model_format "${query.model_format}" is not available for ${family.model_name} with engine ${engine.name}; choose one of: ${listOf(candidates.map((s) => s.model_format))}.`,
        'model_format',
      )
    candidates = next
  }

  if (query.size_in_billions !== undefined) {
    const wanted = query.size_in_billions === NO_SIZE ? NO_SIZE : normalizeSize(query.size_in_billions)
    const next = candidates.filter((spec) => spec.model_size_in_billions === wanted)
    if (next.length === 0)
      throw badRequest(
        `size_in_billions "${query.size_in_billions}" is not available for ${family.model_name}; choose one of: ${listOf(candidates.map((s) => s.model_size_in_billions))}.`,
        'size_in_billions',
      )
    candidates = next
  }

  if (query.quantization) {
    const wanted = query.quantization.toLowerCase()
    const next = candidates.filter((spec) => spec.quantization.toLowerCase() === wanted)
    if (next.length === 0)
      throw badRequest(
        `quantization "${query.quantization}" is not available for ${family.model_name} (${candidates[0].model_format}, ${candidates[0].model_size_in_billions}B); choose one of: ${listOf(candidates.map((s) => s.quantization))}.`,
        'quantization',
      )
    candidates = next
  }

  return [...candidates].sort((a, b) => hubRank(a) - hubRank(b))[0]
}

/** Fills `{quantization}` and `{part}` in a hub file-name template. */
export function specFileNames(spec: ResolvedSpec): string[] {
  if (spec.quantization_parts && spec.model_file_name_split_template) {
    return spec.quantization_parts.map((part) =>
      spec.model_file_name_split_template!.replaceAll('{quantization}', spec.quantization).replaceAll('{part}', part),
    )
  }

  return spec.model_file_name_template ? [spec.model_file_name_template.replaceAll('{quantization}', spec.quantization)] : []
}
