/**
 * Operations for an external engine whose program speaks the OpenAI API (vLLM's and SGLang's servers, llama.cpp's
 * llama-server, a transformers host written to it): `chat` and `complete` turn the model type's payload into an
 * OpenAI request, always stream it, and turn each chunk back into generation events as it arrives. Aborting the
 * endpoint's signal (a client that went away) closes the upstream connection, which such servers take as a cancel.
 */
import type {ExternalEndpoint, ExternalOperations} from './external-engine.js'
import type {ChatPart, ChatPayload, ChatTurn, FinishReason, GenerationEvent, ResponseFormat, SamplingOptions, ToolChoice} from './generation.js'
import type {LlmOperations} from './operations.js'

import {ServiceError} from './errors.js'
import {postForEvents, type UpstreamRefusal} from './event-stream-upstream.js'

export interface OpenAICompatibleOptions {
  /** The `model` field of upstream requests; the served model's uid unless given (start the server with that name). */
  model?: string
}

interface StreamChoice {
  /** `reasoning_content` from vLLM (before 0.11), SGLang and DeepSeek; `reasoning` from newer vLLM. */
  delta?: {content?: string | null; reasoning_content?: string | null; reasoning?: string | null; tool_calls?: Array<{index: number; function?: {name?: string; arguments?: string}}>}
  text?: string
  finish_reason?: string | null
}

interface StreamChunk {
  choices?: StreamChoice[]
  /**
   * The rendered chat prompt's size and end, which this toolkit's transformers host sends in its first chunk, so that
   * the reasoning split knows where the reply starts (see reasoning.ts); other servers send none.
   */
  prompt?: {tokens?: number; tail?: string}
  usage?: {prompt_tokens?: number; completion_tokens?: number; prompt_tokens_details?: {cached_tokens?: number} | null} | null
}

const FINISH_REASONS = new Set<FinishReason>(['length', 'stop', 'tool_calls'])

const sampling = (options: SamplingOptions) => ({
  frequency_penalty: options.frequencyPenalty,
  ignore_eos: options.ignoreEos,
  logit_bias: options.logitBias,
  max_tokens: options.maxTokens,
  min_p: options.minP,
  presence_penalty: options.presencePenalty,
  repetition_penalty: options.repetitionPenalty,
  seed: options.seed,
  stop: options.stop,
  temperature: options.temperature,
  top_k: options.topK,
  top_p: options.topP,
})

/**
 * A turn's pictures in OpenAI's form, as vLLM and SGLang take them: data URLs of the bytes the service read, never the
 * client's own URL, so the engine's program fetches nothing the service did not check.
 */
const contentPart = (part: ChatPart) =>
  part.type === 'text'
    ? {text: part.text, type: 'text'}
    : {image_url: {url: `data:${part.image.mediaType};base64,${part.image.data}`, ...(part.image.detail ? {detail: part.image.detail} : {})}, type: 'image_url'}

const message = (turn: ChatTurn) => ({
  content: turn.parts ? turn.parts.map((part) => contentPart(part)) : turn.content,
  role: turn.role,
  tool_call_id: turn.toolCallId,
  tool_calls: turn.toolCalls?.map((call) => ({function: {arguments: call.arguments, name: call.name}, id: call.id, type: 'function'})),
})

const toolChoice = (choice: ToolChoice | undefined) => (typeof choice === 'object' ? {function: {name: choice.name}, type: 'function'} : choice)

const responseFormat = (format: ResponseFormat | undefined) =>
  format?.type === 'json_schema' ? {json_schema: {name: 'response', schema: format.schema}, type: 'json_schema'} : format

/** A reason as a server wrote it: text as it is, anything else (FastAPI's list of validation errors) as its JSON. */
const reasonText = (value: unknown) => (value === undefined || value === null ? undefined : typeof value === 'string' ? value : JSON.stringify(value))

/** The upstream server's refusal, in the service's vocabulary: its 4xx stay the client's fault, anything else is a 502. */
function upstreamError({status, statusMessage, text}: UpstreamRefusal): ServiceError {
  let reason = text.trim().slice(0, 500)
  try {
    const body = JSON.parse(text) as {error?: unknown; message?: unknown; detail?: unknown}
    const error = typeof body.error === 'object' && body.error !== null ? (body.error as {message?: unknown}).message : body.error
    reason = (reasonText(error) ?? reasonText(body.message) ?? reasonText(body.detail) ?? reason).slice(0, 500)
  } catch {
    // Not JSON: the text itself is the reason.
  }

  const clientFault = status >= 400 && status < 500
  return new ServiceError(clientFault ? status : 502, clientFault ? 'invalid_request' : 'internal_error', `the model's server answered ${status}: ${reason || statusMessage}`)
}

/**
 * An error the server sends as an event once its stream has begun (vLLM and SGLang: `{"error": {"message", "code"}}`,
 * older vLLM `{"object": "error", "message", "code"}`, then `[DONE]`), as the refusal it would have answered before it.
 */
function streamedError(data: string, chunk: Record<string, unknown>): ServiceError | undefined {
  const error = typeof chunk.error === 'object' && chunk.error !== null ? (chunk.error as {code?: unknown}) : chunk.object === 'error' ? (chunk as {code?: unknown}) : undefined
  if (!error && typeof chunk.error !== 'string') return undefined
  const code = Number(error?.code)
  return upstreamError({status: Number.isInteger(code) && code >= 400 && code < 600 ? code : 500, statusMessage: 'an error in its stream', text: data})
}

/** Posts `body` with `stream: true` and yields each chunk's JSON as it arrives, until `[DONE]`. */
async function* streamChunks(endpoint: ExternalEndpoint, path: string, body: Record<string, unknown>): AsyncGenerator<StreamChunk> {
  const answer = await postForEvents(`${endpoint.baseUrl}${path}`, {...body, stream: true, stream_options: {include_usage: true}}, endpoint.signal, {
    readIntervalMs: endpoint.readIntervalMs,
  })
  if (!('events' in answer)) throw upstreamError(answer)
  const {events} = answer
  try {
    for await (const data of events) {
      if (data === '[DONE]') {
        // Reading on to the reply's end (nothing but the end should follow) leaves the connection for the next request.
        try {
          while (!(await events.next()).done);
        } catch {
          // The reply was whole; only the connection is lost.
        }

        return
      }

      const chunk = JSON.parse(data) as StreamChunk & Record<string, unknown>
      const error = streamedError(data, chunk)
      if (error) throw error
      yield chunk
    }

    // A server that dies mid-reply may still end its response cleanly; only `[DONE]` says the reply is whole.
    throw new Error(`the model's server ended its reply to ${path} before [DONE]`)
  } finally {
    // A consumer that stops early closes the connection, so the server stops generating.
    await events.return(undefined)
  }
}

/** Generation events of one streamed choice, ending with `done` once the server has said why it stopped. */
async function* generationEvents(chunks: AsyncIterable<StreamChunk>): AsyncGenerator<GenerationEvent> {
  let finishReason: FinishReason = 'stop'
  let promptTokens = 0
  let completionTokens = 0
  let cachedTokens: number | undefined
  const announced = new Set<number>()
  for await (const chunk of chunks) {
    if (typeof chunk.prompt?.tail === 'string') yield {promptTail: chunk.prompt.tail, promptTokens: chunk.prompt.tokens ?? 0, type: 'start'}
    if (chunk.usage) {
      promptTokens = chunk.usage.prompt_tokens ?? promptTokens
      completionTokens = chunk.usage.completion_tokens ?? completionTokens
      cachedTokens = chunk.usage.prompt_tokens_details?.cached_tokens ?? cachedTokens
    }

    const choice = chunk.choices?.[0]
    if (!choice) continue
    const reasoning = choice.delta?.reasoning_content ?? choice.delta?.reasoning
    if (reasoning) yield {text: reasoning, type: 'reasoning'}
    const text = choice.delta?.content ?? choice.text
    if (text) yield {text, type: 'text'}
    for (const call of choice.delta?.tool_calls ?? []) {
      if (call.function?.name && !announced.has(call.index)) {
        announced.add(call.index)
        yield {index: call.index, name: call.function.name, type: 'tool_call'}
      }

      if (call.function?.arguments) yield {index: call.index, text: call.function.arguments, type: 'tool_arguments'}
    }

    if (choice.finish_reason) finishReason = FINISH_REASONS.has(choice.finish_reason as FinishReason) ? (choice.finish_reason as FinishReason) : 'stop'
  }

  yield {completionTokens, finishReason, promptTokens, type: 'done', ...(cachedTokens === undefined ? {} : {cachedTokens})}
}

/** The LLM operations a program speaking the OpenAI API serves. */
export type OpenAICompatibleOperations = ExternalOperations<Pick<LlmOperations, 'chat' | 'complete'>>

/**
 * The request's tools and tool choice, or neither when it has no tools: the chat route always gives a list (empty when
 * the client sent none) and `auto`, which vLLM refuses (an empty `tools`, and `auto` unless it was started with a tool
 * parser).
 */
const tools = ({toolChoice: choice, tools: list}: ChatPayload) =>
  list && list.length > 0
    ? {tool_choice: toolChoice(choice), tools: list.map((tool) => ({function: {description: tool.description, name: tool.name, parameters: tool.parameters}, type: 'function'}))}
    : {}

/** `chat` and `complete` for a program that serves `/v1/chat/completions` and `/v1/completions`. */
export function openAICompatibleOperations(options: OpenAICompatibleOptions = {}): OpenAICompatibleOperations {
  const model = (endpoint: ExternalEndpoint) => options.model ?? endpoint.modelUid
  return {
    chat(chat, endpoint) {
      return generationEvents(
        streamChunks(endpoint, '/v1/chat/completions', {
          ...sampling(chat),
          messages: chat.messages.map((turn) => message(turn)),
          // vLLM's and SGLang's prefill; vLLM refuses it beside its default add_generation_prompt (true).
          ...(chat.continueFinalMessage ? {add_generation_prompt: false, continue_final_message: true} : {}),
          model: model(endpoint),
          // The switch of hybrid models (Qwen3) in vLLM's and SGLang's terms: an argument of the chat template.
          ...(chat.enableThinking === undefined ? {} : {chat_template_kwargs: {enable_thinking: chat.enableThinking}}),
          response_format: responseFormat(chat.responseFormat),
          ...tools(chat),
        }),
      )
    },
    complete(completion, endpoint) {
      return generationEvents(streamChunks(endpoint, '/v1/completions', {...sampling(completion), model: model(endpoint), prompt: completion.prompt}))
    },
  }
}
