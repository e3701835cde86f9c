/**
 * Searching Hugging Face for models to launch by name: `GET {HF_ENDPOINT}/api/models?search=…&limit=…&full=true`, as
 * huggingface_hub's `list_models(search=…, full=True)` asks it, which answers each repo with its files' names. The
 * quantizations a repository offers are read from its GGUF files' names (hub-names.ts), so one request finds them all.
 */
import type {SearchResult} from '../protocol/catalogue-search.js'

import {ServiceError} from '../kernel/errors.js'
import {ggufChoices, sizeFromRepoName} from './hub-names.js'
import {createHub, networkReason} from './hubs.js'

interface HubModel {
  id?: unknown
  pipeline_tag?: unknown
  siblings?: Array<{rfilename?: unknown}>
}

/** The hub's models matching `words`, as search results named `hf.co/{repo}`; at most `limit`. */
export async function searchHuggingFace(words: string, limit: number, {env = process.env, signal}: {env?: NodeJS.ProcessEnv; signal?: AbortSignal} = {}): Promise<SearchResult[]> {
  const hub = createHub('huggingface', env)
  const url = `${hub.endpoint}/api/models?search=${encodeURIComponent(words)}&limit=${limit}&full=true`
  let response: Response
  try {
    response = await fetch(url, {headers: {accept: 'application/json', ...hub.headers}, signal: AbortSignal.any([AbortSignal.timeout(15_000), ...(signal ? [signal] : [])])})
  } catch (error) {
    throw new ServiceError(503, 'hub_unreachable', `cannot reach huggingface at ${hub.endpoint} (${networkReason(error)}); search the catalogue alone, or point HF_ENDPOINT at a mirror.`)
  }

  if (!response.ok) {
    await response.body?.cancel()
    throw hub.failure(response, url)
  }

  const models = (await response.json().catch(() => [])) as HubModel[]
  return (Array.isArray(models) ? models : []).slice(0, limit).flatMap((model) => {
    if (typeof model?.id !== 'string' || !/^[\w.-]+\/[\w.-]+$/.test(model.id)) return []
    const names = (Array.isArray(model.siblings) ? model.siblings : []).map((file) => file?.rfilename).filter((name): name is string => typeof name === 'string')
    const files = new Map(names.map((path) => [path, {path, sha256: null, size: 0}]))
    const quantizations = ggufChoices({commit: null, files, hub: 'huggingface', repo: model.id, revision: 'main'}).map((choice) => choice.quantization)
    const safetensors = names.some((name) => !name.includes('/') && name.endsWith('.safetensors'))
    const size = sizeFromRepoName(model.id)
    return [
      {
        abilities: typeof model.pipeline_tag === 'string' ? [model.pipeline_tag] : [],
        description: `${model.id} on huggingface`,
        formats: [...(quantizations.length > 0 ? ['ggufv2'] : []), ...(safetensors && quantizations.length === 0 ? ['pytorch'] : [])],
        model_name: `hf.co/${model.id}`,
        model_type: 'LLM',
        quantizations: [...new Set(quantizations)],
        sizes: size ? [size] : [],
        source: 'huggingface',
      },
    ]
  })
}
