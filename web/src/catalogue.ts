/**
 * The catalogue as the pages read it: the model types and engines the service's plugins contribute
 * (`GET /v1/cluster/plugins`) and each type's registrations in full (`GET /v1/model_registrations/{type}?detailed=true`),
 * flattened into what the filters compare.
 */
import {client} from './api.js'
import {bySize} from './catalogue-filters.js'

export interface EngineParameter {
  type?: string
  description?: string
  default?: unknown
  minimum?: number
  maximum?: number
  enum?: unknown[]
}

export interface EngineInfo {
  name: string
  formats: string[]
  model_types: string[]
  parameters: Record<string, EngineParameter>
  plugin: string
}

export interface PluginsInfo {
  engines: EngineInfo[]
  model_types: Array<{name: string; description: string; plugin: string}>
}

export interface ModelSpec {
  model_format: string
  model_size_in_billions: string | number
  quantizations?: string[]
  model_src?: Record<string, {quantizations?: string[]; model_id?: string}>
}

export interface Family {
  model_name: string
  model_description?: string
  model_ability?: string[]
  model_lang?: string[]
  context_length?: number
  model_specs?: ModelSpec[]
  is_builtin: boolean
  [field: string]: unknown
}

/** One catalogue entry with the values its filters match. */
export interface CatalogueEntry {
  family: Family
  abilities: string[]
  formats: string[]
  sizes: string[]
  quantizations: string[]
  engines: string[]
  hubs: string[]
}

export const pluginsInfo = () => client.request<PluginsInfo>('GET', '/v1/cluster/plugins')

export const specQuantizations = (spec: ModelSpec): string[] => [
  ...new Set([...(spec.quantizations ?? []), ...Object.values(spec.model_src ?? {}).flatMap((source) => source.quantizations ?? [])]),
]

const unique = (values: string[]) => [...new Set(values)].sort()

export const familiesOf = (modelType: string) => client.request<Family[]>('GET', `/v1/model_registrations/${encodeURIComponent(modelType)}?detailed=true`)

export function catalogueOf(modelType: string, families: Family[], engines: EngineInfo[]): CatalogueEntry[] {
  return families.map((family) => {
    const specs = family.model_specs ?? []
    const formats = unique(specs.map((spec) => spec.model_format))
    return {
      abilities: family.model_ability ?? [],
      engines: engines.filter((engine) => engine.model_types.includes(modelType) && engine.formats.some((format) => formats.includes(format))).map((engine) => engine.name),
      family,
      formats,
      hubs: unique(specs.flatMap((spec) => Object.keys(spec.model_src ?? {}))),
      quantizations: unique(specs.flatMap(specQuantizations)),
      sizes: [...new Set(specs.map((spec) => String(spec.model_size_in_billions)))].sort(bySize),
    }
  })
}
