import type {MemoryEstimate} from '../client/client.js'

import {formatBytes} from '../util/format.js'

const size = (bytes: number) => `${formatBytes(bytes)} (${bytes} bytes)`
const FROM_THIS_MACHINE = ['cache', 'generated', 'local']
const from = (source: string) => (FROM_THIS_MACHINE.includes(source) ? 'the local file' : source)

/**
 * What `servicectl cal-model-mem` prints: the parts of an estimate; the companion files a launch downloads beside the
 * weights (an image model's VAE and text encoders), each counted in the weights with where its size came from, or
 * why it could not be; and what the engine says it leaves out. A model without a context (an image model) has no
 * context or KV cache line.
 */
export function memoryEstimateLines(estimate: MemoryEstimate): string[] {
  const parallel = typeof estimate.parallel === 'number' ? ` × ${estimate.parallel} parallel sequence${estimate.parallel === 1 ? '' : 's'}` : ''
  const companions = estimate.companion_files ?? []
  const read = estimate.context_length > 0 ? 'header read' : 'sizes read'
  const lines = [`Model version:  ${estimate.model_version} (${read} from ${from(estimate.source)})`]
  if (estimate.context_length > 0) lines.push(`Context:        ${estimate.context_length} tokens${parallel}`)
  const counted = companions.filter((companion) => companion.bytes !== undefined)
  lines.push(`Weights:        ${size(estimate.weights_bytes)}${counted.length > 0 ? `, with ${counted.length} companion file${counted.length === 1 ? '' : 's'}` : ''}`)
  for (const {bytes, error, file_name: file, model_id: repo, role, source} of companions)
    lines.push(`  ${role}: ${repo}/${file}, ${bytes === undefined ? `size unknown, not counted: ${error}` : `${size(bytes)}, size from ${from(source ?? 'the hub')}`}`)
  if (estimate.context_length > 0) lines.push(`KV cache:       ${size(estimate.kv_cache_bytes)}`)
  lines.push(`Overhead:       ${size(estimate.overhead_bytes)}`, `Total:          ${size(estimate.total_bytes)}`)
  if (typeof estimate.not_counted === 'string') lines.push(`Not counted:    ${estimate.not_counted}.`)
  return lines
}
