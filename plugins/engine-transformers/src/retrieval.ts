/**
 * `embed` and `rank` for the engine's program, which serves `/v1/embeddings` and `/v1/rerank` (see python/host.py):
 * one request each, turned into the embedding and rerank types' events.
 */
import type {EmbeddingEvent, EmbeddingPayload, ExternalEndpoint, RankEvent, RankPayload} from 'service-toolkit'

/** Posts JSON to the program and gives its answer; its refusal keeps its status and reason. */
async function post<T>(endpoint: ExternalEndpoint, path: string, body: unknown): Promise<T> {
  const response = await fetch(`${endpoint.baseUrl}${path}`, {body: JSON.stringify(body), headers: {'content-type': 'application/json'}, method: 'POST', signal: endpoint.signal})
  const text = await response.text()
  if (!response.ok) {
    const reason = (JSON.parse(text || '{}') as {error?: {message?: string; param?: string}}).error
    throw Object.assign(new Error(`the model's server answered ${response.status}: ${reason?.message ?? text}`), {
      code: response.status < 500 ? 'invalid_request' : 'internal_error',
      param: reason?.param,
      status: response.status < 500 ? response.status : 502,
    })
  }

  return JSON.parse(text) as T
}

const texts = (inputs: Array<number[] | string>) => {
  if (inputs.some((input) => typeof input !== 'string'))
    throw Object.assign(new Error('the transformers engine takes text inputs, not token ids.'), {code: 'invalid_request', param: 'input', status: 400})
  return inputs as string[]
}

export async function* embed(payload: EmbeddingPayload, endpoint: ExternalEndpoint): AsyncGenerator<EmbeddingEvent> {
  if (payload.dimensions !== undefined)
    throw Object.assign(new Error('the transformers engine returns the model\'s full vectors; leave out dimensions.'), {code: 'invalid_request', param: 'dimensions', status: 400})
  const reply = await post<{data: Array<{embedding: number[]; index: number; tokens: number}>; usage: {prompt_tokens: number}}>(endpoint, '/v1/embeddings', {input: texts(payload.inputs)})
  for (const item of reply.data) yield {index: item.index, tokens: item.tokens, type: 'embedding', vector: item.embedding}
  yield {promptTokens: reply.usage.prompt_tokens, type: 'done'}
}

export async function* rank(payload: RankPayload, endpoint: ExternalEndpoint): AsyncGenerator<RankEvent> {
  const [query] = texts([payload.query])
  const reply = await post<{results: Array<{index: number; relevance_score: number; tokens: number}>; usage: {prompt_tokens: number}}>(endpoint, '/v1/rerank', {documents: texts(payload.documents), query})
  for (const result of reply.results) yield {index: result.index, score: result.relevance_score, tokens: result.tokens, type: 'score'}
  yield {promptTokens: reply.usage.prompt_tokens, type: 'done'}
}
