import type {EngineMatrix} from '../protocol/registrations.js'

import {normalizeSize} from '../kernel/catalogue.js'

/** One way to launch a model, as `servicectl engine` lists it. */
export interface EngineRow {
  name: string
  engine: string
  format: string
  size: string
  quantization: string
  /** Whether a worker there is can run it; if not, why. */
  available: boolean
  reason?: string
}

/** `GET /v1/engines/{model}`: each engine's specs, or why it cannot run here. */
export type EngineSpecs = EngineMatrix

export interface EngineFilters {
  engine?: string
  format?: string
  size?: string
  quantization?: string
}

export interface EngineCombinations {
  rows: EngineRow[]
  /** `engine: why` for each engine (of the engine filter) that cannot run here at all. */
  unavailable: string[]
  /** When no combination is left, the filter that left none, with the values it could have had: one line. */
  unmatched?: string
}

const FILTERS = [
  {field: 'engine', label: 'engine', plural: 'engines', same: (row: string, given: string) => row.toLowerCase() === given.toLowerCase()},
  {field: 'format', label: 'format', plural: 'formats', same: (row: string, given: string) => row === given},
  {field: 'size', label: 'size', plural: 'sizes', same: (row: string, given: string) => row === normalizeSize(given)},
  {field: 'quantization', label: 'quantization', plural: 'quantizations', same: (row: string, given: string) => row.toLowerCase() === given.toLowerCase()},
] as const

/**
 * The combinations of a model's engines that pass the filters. The filters are applied one after the other, so
 * that one that matches nothing is named with the values it could have had (`--model-format foo`: "its formats
 * are ggufv2") instead of an empty table. An engine filter that names only an engine that cannot run here is no
 * mismatch: `unavailable` says why.
 */
export function engineCombinations(model: string, engines: EngineSpecs, filters: EngineFilters): EngineCombinations {
  const unavailable: string[] = []
  let rows: EngineRow[] = []
  for (const [engine, specs] of Object.entries(engines)) {
    if (typeof specs === 'string') {
      if (!filters.engine || FILTERS[0].same(engine, filters.engine)) unavailable.push(`${engine}: ${specs}`)
      continue
    }

    for (const spec of specs)
      for (const quantization of spec.quantizations)
        rows.push({
          // A service from before engines said so per spec lists only what it takes to be available.
          available: spec.available !== false,
          engine,
          format: spec.model_format,
          name: model,
          quantization,
          size: spec.model_size_in_billions,
          ...(spec.available === false && spec.reason ? {reason: spec.reason} : {}),
        })
  }

  const applied: string[] = []
  for (const {field, label, plural, same} of FILTERS) {
    const given = filters[field]
    if (given === undefined) continue
    const left = rows.filter((row) => same(row[field], given))
    if (left.length === 0 && rows.length > 0 && !(field === 'engine' && unavailable.length > 0)) {
      const within = applied.length > 0 ? ` with ${applied.join(', ')}` : ''
      const values = [...new Set(rows.map((row) => row[field]))].join(', ')
      return {rows: [], unavailable, unmatched: `no combination of ${model}${within} has ${label} ${given}; its ${plural} here are ${values}.`}
    }

    applied.push(`${label} ${given}`)
    rows = left
  }

  return {rows, unavailable}
}

/** `engine format size (quantizations): why` for each group of rows that no worker can run, once per reason. */
export function unavailableRows(rows: EngineRow[]): string[] {
  const groups = new Map<string, {head: string; quantizations: string[]; reason: string}>()
  for (const row of rows) {
    if (row.available) continue
    const head = `${row.engine} ${row.format} ${row.size}`
    const group = groups.get(`${head}\n${row.reason}`) ?? {head, quantizations: [], reason: row.reason ?? 'no worker can run it.'}
    group.quantizations.push(row.quantization)
    groups.set(`${head}\n${row.reason}`, group)
  }

  return [...groups.values()].map(({head, quantizations, reason}) => `${head} (${quantizations.join(', ')}): ${reason}`)
}
