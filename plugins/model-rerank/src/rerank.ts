/**
 * `POST /v1/rerank`: scores documents by relevance to a query with a cross-encoder, best first, in the shape
 * Xinference answers (Jina's and Cohere's v1 shape: `results[{index, relevance_score, document}]` plus `meta`), with
 * Jina's `model` and `usage` fields as well so their clients read it too.
 */
import type {Infer, KernelApi, RerankOperations, RouteDefinition} from 'service-toolkit'

import {randomUUID} from 'node:crypto'

const MAX_DOCUMENTS = 1024

function rerankSchema(s: KernelApi['schema']) {
  const document = s.union([s.string(), s.object({text: s.string()}, {unknownKeys: 'strip'})], 'a string or {"text": …}')
  return s.object(
    {
      documents: s.array(document, {description: 'Texts to rank against the query.', maxItems: MAX_DOCUMENTS, minItems: 1}),
      max_chunks_per_doc: s.optional(s.nullable(s.integer({description: 'Accepted for Cohere clients; documents longer than the model reads are refused, not chunked.', minimum: 1}))),
      keep_alive: s.optional(s.keepAlive({description: 'Extension (Ollama\'s): how long the model stays loaded once idle, a duration such as "5m" or seconds; -1 keeps it loaded, 0 unloads it after this request.'})),
      model: s.string({description: 'Uid of a running rerank model.', minLength: 1}),
      query: s.string({minLength: 1}),
      kwargs: s.optional(s.nullable(s.jsonText(s.object({}), {description: "Xinference's further arguments, as JSON text (its clients send \"{}\"); the rerank models here take none."}))),
      return_documents: s.optional(s.nullable(s.boolean({description: 'Include each document\'s text in its result (default false).', fromText: true}))),
      return_len: s.optional(s.nullable(s.boolean({description: 'Accepted for Xinference clients; token counts are always in meta.tokens.', fromText: true}))),
      top_n: s.optional(s.nullable(s.integer({description: 'Return only the best n results (default: all).', minimum: 1}))),
    },
    {title: 'RerankRequest'},
  )
}

type RerankRequest = Infer<ReturnType<typeof rerankSchema>>

function rerankResponseSchema(s: KernelApi['schema']) {
  const tokens = s.object({input_tokens: s.integer({minimum: 0}), output_tokens: s.integer({minimum: 0})})
  return s.object(
    {
      id: s.string(),
      meta: s.object({api_version: s.nullable(s.unknown()), billed_units: s.nullable(s.unknown()), tokens, warnings: s.nullable(s.unknown())}, {description: "Cohere's and Xinference's meta."}),
      model: s.string(),
      results: s.array(
        s.object({
          document: s.nullable(s.object({text: s.string()}, {description: 'With return_documents.'})),
          index: s.integer({description: "The document's position in the request.", minimum: 0}),
          relevance_score: s.number(),
        }),
        {description: 'Best first.'},
      ),
      usage: s.object({total_tokens: s.integer({minimum: 0})}, {description: "Jina's usage."}),
    },
    {title: 'RerankResponse'},
  )
}

export function rerankRoute(api: KernelApi): RouteDefinition<RerankRequest> {
  return {
    body: rerankSchema(api.schema),
    example: {body: {documents: ['Paris is the capital of France.', 'Cats sleep a lot.'], model: 'tiny-random-rerank', query: 'What is the capital of France?', top_n: 2}},
    async handler({body, models, signal}) {
      const model = models.get<RerankOperations>(body.model)
      api.requireAbility(model, 'rerank', 'rerank documents')
      const documents = body.documents.map((document) => (typeof document === 'string' ? document : document.text))
      const empty = documents.findIndex((document) => document.trim() === '')
      if (empty >= 0) throw api.errors.badRequest(`\`documents[${empty}]\` is empty; every document needs some text.`, `documents[${empty}]`)

      const scores: number[] = []
      let promptTokens = 0
      for await (const event of model.invoke('rank', {documents, query: body.query}, signal)) {
        if (event.type === 'score') scores[event.index] = event.score
        else promptTokens = event.promptTokens
      }

      const results = scores
        .map((score, index) => ({document: body.return_documents ? {text: documents[index]} : null, index, relevance_score: score}))
        .sort((a, b) => b.relevance_score - a.relevance_score || a.index - b.index)
        .slice(0, body.top_n ?? documents.length)
      return {
        body: {
          id: randomUUID(),
          meta: {api_version: null, billed_units: null, tokens: {input_tokens: promptTokens, output_tokens: 0}, warnings: null},
          model: body.model,
          results,
          usage: {total_tokens: promptTokens},
        },
        kind: 'json',
      }
    },
    method: 'POST',
    path: '/v1/rerank',
    permission: 'models:read',
    response: rerankResponseSchema(api.schema).json,
    summary: 'Rerank documents by relevance to a query (Xinference, Jina and Cohere shape), best first',
    tag: 'rerank',
  }
}
