/**
 * Request schemas and response builders for the OpenAI chat and completions routes. Field names follow
 * the OpenAI API; `top_k`, `min_p` and `repetition_penalty`-style extensions are accepted as the peers
 * (vLLM, llama.cpp, Xinference) accept them.
 */
import type {KernelApi, SamplingOptions} from 'service-toolkit'

/**
 * Token counts and top_k stop at 2^31 − 1, the most llama.cpp holds (top_k past it would wrap around); a count
 * past the room left in the context is capped there, as OpenAI's "length" finish says.
 */
export function samplingFields(s: KernelApi['schema']) {
  const tokenCount = (description: string) => s.optional(s.nullable(s.integer({description, maximum: s.INT32_MAX, minimum: 1})))
  return {
    frequency_penalty: s.optional(s.nullable(s.number({maximum: 2, minimum: -2}))),
    ignore_eos: s.optional(s.nullable(s.boolean({description: 'Keep generating past end-of-generation tokens (vLLM and llama.cpp extension).'}))),
    logit_bias: s.optional(
      s.nullable(s.record(s.number({maximum: 100, minimum: -100}), {description: 'Token id → bias added to its logit; -100 bans the token.'})),
    ),
    max_completion_tokens: tokenCount('Most tokens to generate; null or absent: until the model stops or the context is full.'),
    max_tokens: tokenCount('Older name of max_completion_tokens; the completions route defaults to 16.'),
    min_p: s.optional(s.nullable(s.number({maximum: 1, minimum: 0}))),
    n: s.optional(s.nullable(s.integer({description: 'Choices to generate, up to 128 as OpenAI allows; only 1 is supported here.', maximum: 128, minimum: 1}))),
    presence_penalty: s.optional(s.nullable(s.number({maximum: 2, minimum: -2}))),
    repetition_penalty: s.optional(
      s.nullable(s.number({description: 'Divides the logits of tokens already in the prompt or answer (vLLM, Transformers and Xinference extension); 1 is off.', maximum: 2, minimum: 0.01})),
    ),
    request_id: s.optional(
      s.nullable(s.string({description: "Xinference's: the caller's name for this request, by which POST /v1/models/{uid}/requests/{id}/abort stops it.", maxLength: 128, minLength: 1})),
    ),
    seed: s.optional(s.nullable(s.int64({description: 'Same seed, same request: same answer.'}))),
    // An empty stop string is found at once, so it would end every answer before its first token.
    stop: s.optional(
      s.nullable(
        s.union([s.string({minLength: 1}), s.array(s.string({minLength: 1}), {maxItems: 16})], 'a non-empty string or an array of up to 16 non-empty strings'),
      ),
    ),
    stream: s.optional(s.nullable(s.boolean())),
    stream_options: s.optional(
      s.nullable(
        s.object({
          include_obfuscation: s.optional(s.nullable(s.boolean({description: 'Accepted; chunks carry no obfuscation padding.'}))),
          include_usage: s.optional(s.nullable(s.boolean())),
        }),
      ),
    ),
    temperature: s.optional(s.nullable(s.number({maximum: 2, minimum: 0}))),
    top_k: s.optional(s.nullable(s.integer({description: 'Sample among the k likeliest tokens; 0 for all.', maximum: s.INT32_MAX, minimum: 0}))),
    top_p: s.optional(s.nullable(s.number({maximum: 1, minimum: 0}))),
    // Accepted and ignored, as OpenAI clients send them for bookkeeping only; still of the type OpenAI declares.
    metadata: s.optional(s.nullable(s.record(s.string({maxLength: 512}), {description: 'Key-value pairs of strings.'}))),
    service_tier: s.optional(s.nullable(s.string())),
    store: s.optional(s.nullable(s.boolean())),
    user: s.optional(s.string()),
  }
}

/**
 * A tool call's `arguments` (chat's and the Responses API's), JSON text that an engine parses to render the
 * conversation, held to the nesting any free-form value is; text that is not JSON is passed on as it is, as OpenAI takes it.
 */
export const jsonTextWithin = (s: KernelApi['schema']) => (text: string, path: string) => {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return text
  }

  s.checkNesting(value, path)
  return text
}

export interface SamplingRequest {
  frequency_penalty?: number | null
  ignore_eos?: boolean | null
  logit_bias?: Record<string, number> | null
  max_completion_tokens?: number | null
  max_tokens?: number | null
  min_p?: number | null
  presence_penalty?: number | null
  repetition_penalty?: number | null
  seed?: number | null
  stop?: string | string[] | null
  temperature?: number | null
  top_k?: number | null
  top_p?: number | null
}

const defined = <T>(value: T | null | undefined): T | undefined => (value === null ? undefined : value)

/** Refused rather than ignored: a client that asked for log probabilities would otherwise get none and no reason. */
export const NO_LOGPROBS = 'the engines here return no log probabilities'

/** A field of OpenAI's that asks for what no engine here gives: a 400 that names it and says how to do without. */
export const notSupported = (api: KernelApi, field: string, why: string, instead: string) =>
  api.errors.badRequest(`\`${field}\` is not supported: ${why}; ${instead}.`, field)

/** One choice a request: several are a 400 that says how to get them, rather than a range error. */
export function refuseSeveralChoices(api: KernelApi, n: number | null | undefined): void {
  if ((n ?? 1) > 1) throw notSupported(api, 'n', 'one choice is generated per request', 'leave it out or set it to 1, and send several requests for several choices')
}

/** OpenAI keys logit_bias by token id written as a string; anything else is a mistake worth naming. */
function tokenBiases(api: KernelApi, biases: Record<string, number>): Record<number, number> {
  const out: Record<number, number> = {}
  for (const [key, bias] of Object.entries(biases)) {
    if (!/^\d+$/.test(key))
      throw api.errors.badRequest(`\`logit_bias\` keys must be token ids such as "1234" (got "${key}").`, `logit_bias.${key}`)
    out[Number(key)] = bias
  }

  return out
}

export function toSampling(api: KernelApi, request: SamplingRequest, defaultMaxTokens?: number): SamplingOptions {
  return {
    frequencyPenalty: defined(request.frequency_penalty),
    ignoreEos: defined(request.ignore_eos),
    logitBias: request.logit_bias ? tokenBiases(api, request.logit_bias) : undefined,
    maxTokens: defined(request.max_completion_tokens) ?? defined(request.max_tokens) ?? defaultMaxTokens,
    minP: defined(request.min_p),
    presencePenalty: defined(request.presence_penalty),
    repetitionPenalty: defined(request.repetition_penalty),
    seed: defined(request.seed),
    stop: request.stop === null || request.stop === undefined ? undefined : Array.isArray(request.stop) ? request.stop : [request.stop],
    temperature: defined(request.temperature),
    topK: defined(request.top_k),
    topP: defined(request.top_p),
  }
}

/** OpenAI's usage; `prompt_tokens_details.cached_tokens` (part of prompt_tokens) where the engine says how many it reused. */
export const usageOf = (promptTokens: number, completionTokens: number, cachedTokens?: number) => ({
  completion_tokens: completionTokens,
  prompt_tokens: promptTokens,
  total_tokens: promptTokens + completionTokens,
  ...(cachedTokens === undefined ? {} : {prompt_tokens_details: {cached_tokens: cachedTokens}}),
})

/**
 * Pulls the first event before the response starts. Engines check a request before generating (the prompt fits,
 * the schema can be enforced) and say so with their first event, so a refused request gets its real HTTP status
 * instead of an error inside a 200 stream; a stream can also announce the prompt size from that event.
 */
export async function started<T>(events: AsyncIterable<T>): Promise<AsyncIterableIterator<T>> {
  const iterator = events[Symbol.asyncIterator]()
  let first: IteratorResult<T> | undefined = await iterator.next()
  const resumed: AsyncIterableIterator<T> = {
    [Symbol.asyncIterator]: () => resumed,
    async next() {
      const next = first ?? (await iterator.next())
      first = undefined
      return next
    },
    // Stopping early (a client that went away, a refused sibling prompt) stops the engine's work too.
    async return() {
      first = undefined
      await iterator.return?.()
      return {done: true, value: undefined}
    },
  }
  return resumed
}

/** The wire shapes of the answers, for the OpenAPI document: the fields OpenAI declares required, as this service fills them. */
export function responseSchemas(s: KernelApi['schema']) {
  const usage = s.object(
    {
      completion_tokens: s.integer({minimum: 0}),
      prompt_tokens: s.integer({minimum: 0}),
      prompt_tokens_details: s.optional(
        s.object({cached_tokens: s.integer({description: 'Prompt tokens the model took from its cache (an earlier turn of the conversation) instead of evaluating them.', minimum: 0})}),
      ),
      total_tokens: s.integer({minimum: 0}),
    },
    {title: 'CompletionUsage'},
  )
  const finishReason = (reasons: string[]) => s.nullable(s.string({enum: reasons}))
  const toolCall = s.object(
    {function: s.object({arguments: s.string({description: 'JSON text of the arguments.'}), name: s.string()}), id: s.string(), type: s.literal('function')},
    {title: 'ChatCompletionMessageToolCall'},
  )
  const toolCallDelta = s.object(
    {
      function: s.object({arguments: s.optional(s.string()), name: s.optional(s.string())}),
      id: s.optional(s.string()),
      index: s.integer({minimum: 0}),
      type: s.optional(s.literal('function')),
    },
    {title: 'ChatCompletionMessageToolCallChunk'},
  )
  const common = {created: s.integer({description: 'Seconds since the epoch.'}), id: s.string(), model: s.string()}
  const chat = s.object(
    {
      ...common,
      choices: s.array(
        s.object({
          finish_reason: s.string({enum: ['stop', 'length', 'tool_calls']}),
          index: s.integer({minimum: 0}),
          logprobs: s.nullable(s.unknown()),
          message: s.object(
            {
              content: s.nullable(s.string()),
              reasoning_content: s.optional(s.nullable(s.string({description: "A reasoning model's thinking, split from its answer (null when it did not think)."}))),
              refusal: s.nullable(s.string()),
              role: s.literal('assistant'),
              tool_calls: s.optional(s.array(toolCall)),
            },
            {title: 'ChatCompletionResponseMessage'},
          ),
        }),
      ),
      object: s.literal('chat.completion'),
      usage,
    },
    {title: 'CreateChatCompletionResponse'},
  )
  const chatChunk = s.object(
    {
      ...common,
      choices: s.array(
        s.object({
          delta: s.object(
            {
              content: s.optional(s.nullable(s.string())),
              reasoning_content: s.optional(s.string({description: "A piece of a reasoning model's thinking."})),
              role: s.optional(s.literal('assistant')),
              tool_calls: s.optional(s.array(toolCallDelta)),
            },
            {title: 'ChatCompletionStreamResponseDelta'},
          ),
          finish_reason: finishReason(['stop', 'length', 'tool_calls']),
          index: s.integer({minimum: 0}),
          logprobs: s.nullable(s.unknown()),
        }),
        {description: 'Empty in the last chunk, which carries only usage (with stream_options.include_usage).'},
      ),
      object: s.literal('chat.completion.chunk'),
      usage: s.optional(s.nullable(usage)),
    },
    {title: 'CreateChatCompletionStreamResponse'},
  )
  const completion = (streamed: boolean) =>
    s.object(
      {
        ...common,
        choices: s.array(
          s.object({
            finish_reason: streamed ? finishReason(['stop', 'length']) : s.string({enum: ['stop', 'length']}),
            index: s.integer({description: "The prompt's position in the request.", minimum: 0}),
            logprobs: s.nullable(s.unknown()),
            text: s.string(),
          }),
        ),
        object: s.literal('text_completion'),
        usage: streamed ? s.optional(usage) : usage,
      },
      {title: streamed ? 'CompletionChunk' : 'CreateCompletionResponse'},
    )
  return {chat, chatChunk, completion: completion(false), completionChunk: completion(true)}
}
