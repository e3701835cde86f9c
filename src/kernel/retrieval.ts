/**
 * Engine-native request and event types of embedding and reranking models, shared by the `embedding` and `rerank`
 * model types and the engines that run them. Inputs are text or token ids of the model's vocabulary.
 */
export type TextInput = string | number[]

export interface EmbeddingPayload {
  inputs: TextInput[]
  /** Shorter vectors from a Matryoshka model; the engine refuses sizes the model was not trained for. */
  dimensions?: number
}

/** `embed` yields one `embedding` per input (L2-normalized, in any order), then one `done`. */
export type EmbeddingEvent =
  | {type: 'embedding'; index: number; vector: number[]; tokens: number}
  | {type: 'done'; promptTokens: number}

export interface RankPayload {
  query: TextInput
  documents: TextInput[]
}

/** `rank` yields one `score` (relevance in 0..1) per document, in any order, then one `done`. */
export type RankEvent = {type: 'score'; index: number; score: number; tokens: number} | {type: 'done'; promptTokens: number}
