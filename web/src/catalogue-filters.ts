/**
 * How the catalogue's entries are filtered and labelled for people: pure functions, without the service's client, so
 * they are tested in Node (test/unit/web-catalogue.test.ts).
 */
import type {CatalogueEntry} from './catalogue.js'

export const bySize = (a: string, b: string) => Number(a.replace('_', '.')) - Number(b.replace('_', '.'))

export interface Filters {
  text: string
  ability: string
  engine: string
  format: string
  size: string
  quantization: string
}

export const NO_FILTERS: Filters = {ability: '', engine: '', format: '', quantization: '', size: '', text: ''}

export function matches(entry: CatalogueEntry, filters: Filters): boolean {
  const text = filters.text.trim().toLowerCase()
  if (text && !`${entry.family.model_name} ${entry.family.model_description ?? ''}`.toLowerCase().includes(text)) return false
  if (filters.ability && !entry.abilities.includes(filters.ability)) return false
  if (filters.engine && !entry.engines.includes(filters.engine)) return false
  if (filters.format && !entry.formats.includes(filters.format)) return false
  if (filters.size && !entry.sizes.includes(filters.size)) return false
  return !filters.quantization || entry.quantizations.some((quantization) => quantizationKey(quantization) === filters.quantization)
}

/** A size in billions as the catalogue writes it ("0_5") read by people (0.5 B); a model without one (an embedding model's "none") shows a dash. */
export const sizeLabel = (size: string | number | null | undefined) => {
  const text = String(size ?? '').replace('_', '.')
  return text === '' || text.toLowerCase() === 'none' ? '—' : `${text} B`
}

/**
 * One name for the quantizations that hubs write in several ways: GGUF's upper case (Q4_0, F16) and PyTorch's lower
 * case with a "p" (q4_0, fp16) are the same choice to a person filtering the catalogue.
 */
export function quantizationKey(quantization: string): string {
  const key = quantization.toLowerCase().replace(/^fp(?=\d)/, 'f')
  return /^(i?q\d|f\d|bf\d)/.test(key) ? key.toUpperCase() : key
}
