/**
 * Engine-native request and event types of text generation, shared by the LLM model type (which speaks
 * OpenAI and Anthropic on the wire) and every engine that runs LLMs. All wire formatting stays in the
 * model-type plugin; engines receive these plain, already validated values.
 */
export interface SamplingOptions {
  /** Upper bound on generated tokens; the engine also stops at the end of its context. */
  maxTokens?: number
  temperature?: number
  topP?: number
  topK?: number
  minP?: number
  seed?: number
  stop?: string[]
  presencePenalty?: number
  frequencyPenalty?: number
}

export interface ChatTurn {
  role: 'system' | 'user' | 'assistant' | 'tool'
  content: string
}

export interface ChatPayload extends SamplingOptions {
  messages: ChatTurn[]
}

export interface CompletionPayload extends SamplingOptions {
  prompt: string
}

export type FinishReason = 'stop' | 'length' | 'abort'

export type GenerationEvent =
  | {type: 'text'; text: string}
  | {type: 'done'; finishReason: FinishReason; promptTokens: number; completionTokens: number}
