/**
 * The operations each model type asks of its engines, with the payload each takes and the events it yields. A
 * model type's routes call them through `ModelHandle<Ops>.invoke` and its engines implement them as
 * `EngineOperations<Ops>`, so both ends are checked against one declaration at compile time. The built-in types
 * live here rather than in their plugins because plugins never import each other and an engine plugin needs them
 * as much as the model-type plugin does.
 */
import type {SpeechEvent, SpeechPayload, TranscriptionEvent, TranscriptionPayload} from './audio.js'
import type {ChatPayload, CompletionPayload, GenerationEvent, TokenCountEvent} from './generation.js'
import type {EmbeddingEvent, EmbeddingPayload, RankEvent, RankPayload} from './retrieval.js'

/** One operation: what it takes and what it yields. */
export interface OperationSpec<Payload = unknown, Event = unknown> {
  payload: Payload
  event: Event
}

/** A model type's operations by name. Declare it as an interface or type whose every property is an OperationSpec. */
export type OperationMap<Ops = Record<string, OperationSpec>> = {[K in keyof Ops]: OperationSpec}

/** Operations whose types nobody declared, as the kernel forwards them between processes. */
export type UntypedOperations = Record<string, OperationSpec>

/** What an engine implements: each operation takes its payload and yields its events; aborting the signal stops it. */
export type EngineOperations<Ops extends OperationMap<Ops> = UntypedOperations> = {
  [K in keyof Ops]: (payload: Ops[K]['payload'], signal: AbortSignal) => AsyncIterable<Ops[K]['event']>
}

/**
 * The `LLM` type. `complete` is always there; `chat` and `count_tokens` only for a model with a chat template (its
 * abilities then include `chat`).
 */
export interface LlmOperations {
  chat: OperationSpec<ChatPayload, GenerationEvent>
  complete: OperationSpec<CompletionPayload, GenerationEvent>
  /** The prompt size the same request to `chat` would have. */
  count_tokens: OperationSpec<ChatPayload, TokenCountEvent>
}

/** The `embedding` type. */
export interface EmbeddingOperations {
  embed: OperationSpec<EmbeddingPayload, EmbeddingEvent>
}

/** The `rerank` type. */
export interface RerankOperations {
  rank: OperationSpec<RankPayload, RankEvent>
}

/** The `audio` type: `transcribe` for `audio2text` models, `speak` for `text2audio` ones. */
export interface AudioOperations {
  transcribe: OperationSpec<TranscriptionPayload, TranscriptionEvent>
  speak: OperationSpec<SpeechPayload, SpeechEvent>
}
