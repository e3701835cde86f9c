// Wire types of the embeddings and rerank routes; see launch.ts for why they live in src/protocol/.

/** A text, or token ids of the model's vocabulary. */
export type EmbeddingInput = string | number[]

/** `POST /v1/embeddings` (OpenAI's shape), with float vectors. */
export interface CreateEmbeddingResponse {
  object: 'list'
  model: string
  /** One L2-normalized vector per input, in the order of the inputs. */
  data: Array<{object: 'embedding'; index: number; embedding: number[]}>
  usage: {prompt_tokens: number; total_tokens: number}
}

export interface EmbeddingOptions {
  /** Shorter vectors, for models trained to allow them (Matryoshka). */
  dimensions?: number
  user?: unknown
}

/** `POST /v1/rerank` (Xinference's, Jina's and Cohere's v1 shape). */
export interface RerankResponse {
  id: string
  model: string
  /** Best first; `document` is null unless `return_documents` was asked for. */
  results: Array<{index: number; relevance_score: number; document: {text: string} | null}>
  meta: {api_version: null; billed_units: null; tokens: {input_tokens: number; output_tokens: number}; warnings: null}
  usage: {total_tokens: number}
}

export interface RerankOptions {
  /** Only the best n results (default: all). */
  top_n?: number
  /** Include each document's text in its result. */
  return_documents?: boolean
  /** Accepted for Cohere clients. */
  max_chunks_per_doc?: number
  /** Accepted for Xinference clients; token counts are always in `meta.tokens`. */
  return_len?: boolean
}
