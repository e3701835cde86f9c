/**
 * Engine-native request and event types of text generation, shared by the LLM model type (which speaks
 * OpenAI and Anthropic on the wire) and every engine that runs LLMs. All wire formatting stays in the
 * model-type plugin; engines receive these plain, already validated values.
 */
import type {ChatImage} from './image-inputs.js'

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
  /** Divides the logits of tokens already seen (vLLM's and Transformers' repetition_penalty, llama.cpp's repeat_penalty); 1 is off. */
  repetitionPenalty?: number
  /** Token id → value added to its logit (OpenAI's logit_bias); -100 bans the token, 100 all but forces it. */
  logitBias?: Record<number, number>
  /** Never end on an end-of-generation token (vLLM's and llama.cpp's ignore_eos), e.g. to generate exactly maxTokens. */
  ignoreEos?: boolean
}

/** A call the assistant made in an earlier turn; `arguments` is the JSON text of its arguments. */
export interface ToolCall {
  id: string
  name: string
  arguments: string
}

/** A piece of a turn that shows pictures: its text and pictures in the order the client gave them. */
export type ChatPart = {type: 'text'; text: string} | {type: 'image'; image: ChatImage}

export interface ChatTurn {
  role: 'system' | 'user' | 'assistant' | 'tool'
  /** The turn's text; with `parts`, their text pieces joined, for an engine that reads only text. */
  content: string
  /** A user turn with pictures: text and pictures in order (see image-inputs.ts); absent for text alone. */
  parts?: ChatPart[]
  /** Assistant turns: the tools it called, in order. */
  toolCalls?: ToolCall[]
  /** Tool turns: the id of the call this is the result of. */
  toolCallId?: string
}

/**
 * A tool the model may call. `param` names where the schema sits in the request (`tools[0].function.parameters`),
 * so an engine that cannot enforce part of it can say exactly which field to change.
 */
export interface ToolDefinition {
  name: string
  description?: string
  parameters?: Record<string, unknown>
  param?: string
}

/** `auto`: the model decides; `none`: no calls; `required`: at least one call; `{name}`: a call of that tool. */
export type ToolChoice = 'auto' | 'none' | 'required' | {name: string}

/** Output the engine must produce: free text, any JSON value, or JSON matching a schema. */
export type ResponseFormat =
  | {type: 'text'}
  | {type: 'json_object'}
  | {type: 'json_schema'; schema: Record<string, unknown>; param?: string}

export interface ChatPayload extends SamplingOptions {
  messages: ChatTurn[]
  tools?: ToolDefinition[]
  toolChoice?: ToolChoice
  responseFormat?: ResponseFormat
  /**
   * The answer continues the final message, an assistant turn without tool calls, instead of opening a new turn after
   * it: Anthropic's prefill, vLLM's `continue_final_message`. Otherwise the final message is closed like any other.
   */
  continueFinalMessage?: boolean
  /**
   * False: a hybrid model (Qwen3) is rendered not to think (its template's `enable_thinking`), and no model's
   * reasoning is returned. Absent or true: the model's default.
   */
  enableThinking?: boolean
  /** Most tokens the reasoning may take (Anthropic's `budget_tokens`), where the engine can bound it. */
  reasoningBudget?: number
}

export interface CompletionPayload extends SamplingOptions {
  /** Text, or token ids of the model's vocabulary. */
  prompt: string | number[]
}

export type FinishReason = 'stop' | 'length' | 'tool_calls' | 'abort'

/**
 * What `chat` and `complete` yield: `start` once the prompt is accepted (so a bad request fails before any output and
 * a stream can announce the prompt's size), then text and tool calls as they are generated, then exactly one `done`.
 * A tool call is announced by `tool_call` and its JSON arguments follow as `tool_arguments` pieces.
 */
export type GenerationEvent =
  | {
      type: 'start'
      promptTokens: number
      /** The prompt as text, when it was given as token ids. */
      prompt?: string
      /**
       * The end of the rendered chat prompt, when the `text` events that follow are the model's raw output, reasoning
       * markers and all: whether the prompt opened a reasoning block decides where the reasoning parser starts.
       */
      promptTail?: string
    }
  | {type: 'text'; text: string}
  /** Reasoning (thinking) text, split from the answer by the engine or by the reasoning parser (reasoning.ts). */
  | {type: 'reasoning'; text: string}
  | {type: 'tool_call'; index: number; name: string}
  | {type: 'tool_arguments'; index: number; text: string}
  | {
      type: 'done'
      finishReason: FinishReason
      promptTokens: number
      completionTokens: number
      /**
       * Of the prompt's tokens, those the engine took from its cache (a conversation's earlier turns) instead of
       * evaluating them: OpenAI's `cached_tokens`, Anthropic's `cache_read_input_tokens`. Absent when the engine does
       * not say.
       */
      cachedTokens?: number
      /** The stop sequence that ended the generation, when one did. */
      stopSequence?: string
    }

/** What `count_tokens` (payload: a ChatPayload) yields: the prompt size the same request to `chat` would have. */
export interface TokenCountEvent {
  type: 'tokens'
  count: number
}

/**
 * Two consecutive events of one generation as one, when they can be: text or reasoning pieces, or argument pieces of the same
 * tool call, concatenated. A model process sends the tokens that arrive within its stream interval this way, so a
 * fast model costs the service and the client one chunk per interval rather than one per token.
 */
export function joinGenerationEvents(earlier: unknown, later: unknown): GenerationEvent | undefined {
  const first = earlier as GenerationEvent
  const second = later as GenerationEvent
  if (first?.type === 'text' && second?.type === 'text') return {text: first.text + second.text, type: 'text'}
  if (first?.type === 'reasoning' && second?.type === 'reasoning') return {text: first.text + second.text, type: 'reasoning'}
  if (first?.type === 'tool_arguments' && second?.type === 'tool_arguments' && first.index === second.index)
    return {index: first.index, text: first.text + second.text, type: 'tool_arguments'}
  return undefined
}
