/**
 * `GET /v1/catalogue/search` (`servicectl search`): the catalogue's models of every type whose name, family, description,
 * abilities or sizes hold every word asked for, best matches (words in the name) first; with `hub=true`, the hub's own
 * search too. The first results get the memory estimate a launch of their smallest offer would need (the estimate
 * `POST /v1/models/memory` makes) and whether that fits the memory free on this machine.
 */
import type {ModelFamily} from '../../kernel/catalogue.js'
import type {RouteDefinition} from '../../kernel/contracts.js'
import type {Kernel} from '../../kernel/kernel.js'
import type {ModelRegistry} from '../../kernel/registry.js'
import type {ModelService} from '../../protocol/services.js'

import {flattenFamily, NO_SIZE} from '../../kernel/catalogue.js'
import {badRequest} from '../../kernel/errors.js'
import {booleanText} from '../../kernel/schema.js'
import {MAX_SEARCH_CHARACTERS, MAX_SEARCH_RESULTS, MAX_SEARCH_WORDS, type SearchReply, searchReplySchema, type SearchResult} from '../../protocol/catalogue-search.js'

export interface CatalogueSearchDependencies {
  kernel: Kernel
  registry: ModelRegistry
  supervisor: ModelService
  /** The hub's own search, when the service has one. */
  searchHub?: (words: string, limit: number, signal: AbortSignal) => Promise<SearchResult[]>
}

/** Estimates read GGUF headers, from the hub when not cached: only the first results get one, a few at a time. */
const ESTIMATED_RESULTS = 10
const ESTIMATES_AT_ONCE = 4
const unique = (values: string[]) => [...new Set(values)]
const sizeNumber = (size: string) => (size === NO_SIZE ? 0 : Number(size.replace('_', '.')))

/** How well a family matches: the sum, over the words, of the weight of the best field holding it; 0 when a word is nowhere. */
function score(family: ModelFamily, modelType: string, words: string[]): number {
  const sizes = flattenFamily(family).map((spec) => `${spec.model_size_in_billions.replace('_', '.')}b`)
  const fields: Array<[number, string]> = [
    [4, family.model_name],
    [2, String(family.model_family ?? '')],
    [2, [...(family.model_ability ?? []), modelType, ...sizes].join(' ')],
    [1, String(family.model_description ?? '')],
  ]
  let total = 0
  for (const word of words) {
    const weight = Math.max(0, ...fields.filter(([, text]) => text.toLowerCase().includes(word)).map(([weight]) => weight))
    if (weight === 0) return 0
    total += weight
  }

  return total
}

function resultOf(family: ModelFamily, modelType: string): SearchResult {
  const specs = flattenFamily(family)
  return {
    abilities: family.model_ability ?? [],
    description: String(family.model_description ?? ''),
    formats: unique(specs.map((spec) => spec.model_format)),
    model_name: family.model_name,
    model_type: modelType,
    quantizations: unique(specs.map((spec) => spec.quantization).filter((quantization) => quantization !== 'none')),
    sizes: unique(specs.map((spec) => spec.model_size_in_billions).filter((size) => size !== NO_SIZE)).sort((a, b) => sizeNumber(a) - sizeNumber(b)),
    source: 'catalogue',
  }
}

/** The smallest launch a family offers: its smallest size, at Q4_K_M where that size has it. */
function smallestLaunch(family: ModelFamily): {size?: string; quantization?: string; label: string} {
  const specs = flattenFamily(family).sort((a, b) => sizeNumber(a.model_size_in_billions) - sizeNumber(b.model_size_in_billions))
  const size = specs[0]?.model_size_in_billions
  const atSize = specs.filter((spec) => spec.model_size_in_billions === size)
  const spec = atSize.find((candidate) => candidate.quantization.toLowerCase() === 'q4_k_m') ?? atSize[0]
  const quantization = spec && spec.quantization !== 'none' ? spec.quantization : undefined
  return {label: [size && size !== NO_SIZE ? `${size}B` : '', spec?.model_format, quantization].filter(Boolean).join(' '), quantization, size: size === NO_SIZE ? undefined : size}
}

/** The most memory one worker has free: its GPUs together, or its RAM. */
function freeMemory(supervisor: ModelService): number {
  return Math.max(0, ...supervisor.describeWorkers().filter((worker) => worker.state === 'ready').map(({resources}) => Math.max(resources.memory_free_bytes, resources.gpus.reduce((sum, gpu) => sum + gpu.memory_free_bytes, 0))))
}

async function withMemory(results: SearchResult[], families: ModelFamily[], supervisor: ModelService, signal: AbortSignal): Promise<void> {
  const free = freeMemory(supervisor)
  let next = 0
  const work = async () => {
    while (next < Math.min(families.length, ESTIMATED_RESULTS)) {
      const index = next++
      const launch = smallestLaunch(families[index])
      try {
        const estimate = await supervisor.estimateMemory({model_name: results[index].model_name, model_type: results[index].model_type, quantization: launch.quantization, size_in_billions: launch.size}, {signal})
        results[index].memory = {fits: free > 0 ? estimate.total_bytes <= free : null, launch: launch.label, total_bytes: estimate.total_bytes}
      } catch (error) {
        results[index].memory = {fits: null, launch: launch.label, note: (error as Error).message, total_bytes: null}
      }
    }
  }

  await Promise.all(Array.from({length: ESTIMATES_AT_ONCE}, work))
}

/** The words of `q`, lower-cased, refused past the bounds with what to do. */
function wordsOf(q: string): string[] {
  if ([...q].length > MAX_SEARCH_CHARACTERS) throw badRequest(`q is longer than ${MAX_SEARCH_CHARACTERS} characters; search with a few words.`, 'q')
  const words = q.toLowerCase().split(/\s+/).filter(Boolean)
  if (words.length === 0) throw badRequest('q has no words; give one or more words to search for, such as `qwen gguf`.', 'q')
  if (words.length > MAX_SEARCH_WORDS) throw badRequest(`q has ${words.length} words, more than the ${MAX_SEARCH_WORDS} a search takes.`, 'q')
  return words
}

export function catalogueSearchRoutes({kernel, registry, searchHub, supervisor}: CatalogueSearchDependencies): RouteDefinition[] {
  return [
    {
      example: {query: {hub: false, limit: 5, q: 'tiny llm'}},
      async handler({query, signal}) {
        const q = String(query.q)
        const words = wordsOf(q)
        const limit = query.limit === undefined ? 20 : Number(query.limit)
        if (!Number.isInteger(limit) || limit < 1 || limit > MAX_SEARCH_RESULTS) throw badRequest(`limit must be a whole number from 1 to ${MAX_SEARCH_RESULTS}.`, 'limit')
        const found = [...kernel.modelTypes.keys()]
          .flatMap((modelType) => registry.list(modelType).map(({family}) => ({family, modelType, score: score(family, modelType, words)})))
          .filter((match) => match.score > 0)
          .sort((a, b) => b.score - a.score || a.family.model_name.localeCompare(b.family.model_name))
          .slice(0, limit)
        const results = found.map(({family, modelType}) => resultOf(family, modelType))
        const reply: SearchReply = {query: q, results}
        const hub = booleanText(String(query.hub ?? '')) === true && searchHub
        const [, hubResults] = await Promise.all([
          withMemory(results, found.map(({family}) => family), supervisor, signal),
          hub ? hub(words.join(' '), limit, signal).catch((error: Error) => void (reply.hub_error = error.message)) : undefined,
        ])
        results.push(...(hubResults ?? []))
        return {body: reply, kind: 'json', status: 200}
      },
      method: 'GET',
      path: '/v1/catalogue/search',
      permission: 'models:list',
      query: {
        hub: {description: "Search the hub (HF_ENDPOINT) too; its models are launched by their hf.co/{user}/{repo} name.", schema: {default: false, type: 'boolean'}},
        limit: {description: `Results from the catalogue, and from the hub, at most (1 to ${MAX_SEARCH_RESULTS}).`, schema: {default: 20, maximum: MAX_SEARCH_RESULTS, minimum: 1, type: 'integer'}},
        q: {description: `Words to search for (at most ${MAX_SEARCH_WORDS}, ${MAX_SEARCH_CHARACTERS} characters), all of which a model must match.`, required: true, schema: {maxLength: MAX_SEARCH_CHARACTERS, type: 'string'}},
      },
      response: searchReplySchema.json,
      summary: "Search the catalogue (names, families, descriptions, abilities, sizes) and, with hub=true, the hub, with each model's sizes, quantizations and whether its smallest launch fits this machine",
      tag: 'registrations',
    },
  ]
}
