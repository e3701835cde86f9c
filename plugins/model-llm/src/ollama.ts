/**
 * Ollama's generation API, `POST /api/chat` and `POST /api/generate`, so that tools speaking only Ollama (Open WebUI,
 * editors' plugins, the `ollama` npm client) use the service's LLMs unchanged. Answers stream as NDJSON, one JSON
 * object a line, by default as in Ollama; `stream: false` answers one object. Durations are nanoseconds, as Ollama's.
 */
import type {ChatPayload, ChatTurn, GenerationEvent, Infer, KernelApi, LlmOperations, ModelHandle, ResponseFormat, RouteDefinition, SamplingOptions} from 'service-toolkit'

import {randomBytes} from 'node:crypto'

import {type ImageSlot, IMAGE_BASE64_CHARACTERS, imageSlot, readImages, turnContent} from './images.js'
import {started} from './openai-shapes.js'

const NDJSON = 'application/x-ndjson'

/** Ollama's `options` the engines honour; the rest of Ollama's (num_ctx, num_gpu, mirostat, …) are taken and ignored, as Ollama ignores those it does not know. */
function optionsSchema(s: KernelApi['schema']) {
  return s.object(
    {
      min_p: s.optional(s.number({maximum: 1, minimum: 0})),
      num_predict: s.optional(s.integer({description: 'Most tokens to generate; -1 (or absent): until the model stops or the context is full.', maximum: s.INT32_MAX, minimum: -2})),
      seed: s.optional(s.int64()),
      stop: s.optional(s.array(s.string({minLength: 1}), {maxItems: 16})),
      temperature: s.optional(s.number({maximum: 2, minimum: 0})),
      top_k: s.optional(s.integer({maximum: s.INT32_MAX, minimum: 0})),
      top_p: s.optional(s.number({maximum: 1, minimum: 0})),
    },
    {description: "Ollama's model options; those not listed are accepted and ignored.", title: 'OllamaOptions', unknownKeys: 'strip'},
  )
}

function commonFields(s: KernelApi['schema']) {
  return {
    format: s.optional(s.union([s.literal('json'), s.jsonSchema()], '"json", or a JSON Schema the answer must match')),
    keep_alive: s.optional(s.keepAlive()),
    model: s.string({description: 'Uid of a running model.', minLength: 1}),
    options: s.optional(optionsSchema(s)),
    stream: s.optional(s.boolean({description: 'Stream NDJSON lines (the default) or answer one object.'})),
    think: s.optional(
      s.union([s.boolean(), s.string({enum: ['low', 'medium', 'high']})], 'true, false, or "low", "medium", "high"', {
        description: "False: a hybrid reasoning model answers without thinking. True or a level: the model's thinking, answered as `thinking`; the level is taken as true.",
      }),
    ),
  }
}

function chatSchema(s: KernelApi['schema']) {
  const toolCall = s.object({function: s.object({arguments: s.record(s.unknown()), name: s.string({minLength: 1})}, {unknownKeys: 'strip'})}, {unknownKeys: 'strip'})
  const message = s.object(
    {
      content: s.string(),
      images: s.optional(s.nullable(s.array(s.string({description: 'A picture, base64 (8 MiB at most).', maxLength: IMAGE_BASE64_CHARACTERS}), {maxItems: 16}))),
      role: s.string({enum: ['system', 'user', 'assistant', 'tool']}),
      thinking: s.optional(s.string()),
      tool_calls: s.optional(s.array(toolCall, {maxItems: 128})),
      tool_name: s.optional(s.string()),
    },
    {title: 'OllamaMessage'},
  )
  const tool = s.object({
    function: s.object({description: s.optional(s.string()), name: s.string({pattern: /^[\w-]{1,64}$/}), parameters: s.optional(s.jsonSchema({description: 'JSON Schema of the arguments.'}))}, {unknownKeys: 'strip'}),
    type: s.literal('function'),
  })
  return s.object({...commonFields(s), messages: s.array(message, {maxItems: 4096}), tools: s.optional(s.array(tool, {maxItems: 128}))}, {title: 'OllamaChatRequest'})
}

function generateSchema(s: KernelApi['schema']) {
  return s.object(
    {
      ...commonFields(s),
      context: s.optional(s.array(s.integer({minimum: 0}), {description: 'Deprecated in Ollama; not supported: send the conversation to /api/chat.', maxItems: 0})),
      images: s.optional(s.nullable(s.array(s.string({description: 'A picture, base64 (8 MiB at most).', maxLength: IMAGE_BASE64_CHARACTERS}), {maxItems: 16}))),
      prompt: s.optional(s.string()),
      raw: s.optional(s.boolean({description: 'The prompt as it is, without the model\'s chat template.'})),
      suffix: s.optional(s.string({description: 'Not supported: fill-in-the-middle needs a model with infill tokens.', maxLength: 0})),
      system: s.optional(s.string()),
      template: s.optional(s.string({description: 'Not supported: the model\'s own chat template is used.', maxLength: 0})),
    },
    {title: 'OllamaGenerateRequest'},
  )
}

type ChatRequest = Infer<ReturnType<typeof chatSchema>>
type GenerateRequest = Infer<ReturnType<typeof generateSchema>>
type Common = Pick<ChatRequest, 'format' | 'options' | 'think'>

function toSampling({options = {}}: Common): SamplingOptions {
  return {
    maxTokens: options.num_predict === undefined || options.num_predict < 0 ? undefined : options.num_predict,
    minP: options.min_p,
    seed: options.seed,
    stop: options.stop,
    temperature: options.temperature,
    topK: options.top_k,
    topP: options.top_p,
  }
}

function toFormat(format: Common['format']): ResponseFormat | undefined {
  if (format === undefined) return undefined
  return format === 'json' ? {type: 'json_object'} : {param: 'format', schema: format, type: 'json_schema'}
}

/**
 * A message's text and Ollama's `images` (base64, no data URL), which Ollama's templates show before the text;
 * `at` is where the message is in the request (`messages[2]`, or nothing for /api/generate's own `images`).
 */
function shownWith(api: KernelApi, text: string, images: string[] | null | undefined, at: string, role: string, slots: ImageSlot[]): Pick<ChatTurn, 'content' | 'parts'> {
  if (!images?.length) return {content: text}
  const field = at ? `${at}.images` : 'images'
  if (role !== 'user') throw api.errors.badRequest(`\`${field}\`: pictures belong in user messages.`, field)
  return turnContent([...images.map((data, index) => imageSlot({data, field: `${field}[${index}]`}, slots)), {text, type: 'text'}])
}

/** Ollama's switch of thinking: false turns a hybrid model's off; true and the levels leave the model's default on. */
const thinkingOf = ({think}: Common): Pick<ChatPayload, 'enableThinking'> => (think === undefined ? {} : {enableThinking: think !== false})

/** The per-request figures Ollama closes every answer with. */
function closing(event: Extract<GenerationEvent, {type: 'done'}>, startedAt: bigint, firstTokenAt: bigint | undefined) {
  const now = process.hrtime.bigint()
  const promptDone = firstTokenAt ?? now
  return {
    done: true,
    done_reason: event.finishReason === 'length' ? 'length' : 'stop',
    eval_count: event.completionTokens,
    eval_duration: Number(now - promptDone),
    load_duration: 0,
    prompt_eval_count: event.promptTokens,
    prompt_eval_duration: Number(promptDone - startedAt),
    total_duration: Number(now - startedAt),
  }
}

interface Piece {
  text: string
  thinking: string
  calls: Array<{function: {name: string; arguments: Record<string, unknown>}}>
}

/**
 * Runs a generation and shapes it as Ollama does: one line per piece of text while it streams (tool calls, whose
 * arguments Ollama sends as an object, once each is whole), then a closing line; or one object at the end.
 */
async function answer(
  api: KernelApi,
  events: AsyncIterableIterator<GenerationEvent>,
  stream: boolean,
  line: (piece: Piece) => Record<string, unknown>,
): Promise<{kind: 'json'; body: unknown} | {kind: 'bytes'; contentType: string; body: AsyncIterable<Uint8Array>}> {
  const startedAt = process.hrtime.bigint()
  let firstTokenAt: bigint | undefined
  const calls: Array<{name: string; text: string}> = []
  const parsedCall = (index: number) => {
    const call = calls[index]
    try {
      return {function: {arguments: JSON.parse(call.text || '{}') as Record<string, unknown>, name: call.name}}
    } catch {
      return {function: {arguments: {}, name: call.name}}
    }
  }

  async function* pieces(): AsyncGenerator<Piece | Extract<GenerationEvent, {type: 'done'}>> {
    for await (const event of events) {
      if (event.type === 'text' || event.type === 'reasoning') {
        firstTokenAt ??= process.hrtime.bigint()
        yield event.type === 'text' ? {calls: [], text: event.text, thinking: ''} : {calls: [], text: '', thinking: event.text}
      } else if (event.type === 'tool_call') {
        firstTokenAt ??= process.hrtime.bigint()
        if (calls.length > 0) yield {calls: [parsedCall(calls.length - 1)], text: '', thinking: ''}
        calls[event.index] = {name: event.name, text: ''}
      } else if (event.type === 'tool_arguments') calls[event.index].text += event.text
      else if (event.type === 'done') {
        if (calls.length > 0) yield {calls: [parsedCall(calls.length - 1)], text: '', thinking: ''}
        yield event
      }
    }
  }

  if (!stream) {
    const whole: Piece = {calls: [], text: '', thinking: ''}
    for await (const piece of pieces()) {
      if ('type' in piece) return {body: {...line(whole), ...closing(piece, startedAt, firstTokenAt)}, kind: 'json'}
      whole.text += piece.text
      whole.thinking += piece.thinking
      whole.calls.push(...piece.calls)
    }

    throw api.errors.create(500, 'generation_failed', 'the model ended its answer without finishing it.')
  }

  const encoder = new TextEncoder()
  async function* lines(): AsyncGenerator<Uint8Array> {
    try {
      for await (const piece of pieces()) {
        const object = 'type' in piece ? {...line({calls: [], text: '', thinking: ''}), ...closing(piece, startedAt, firstTokenAt)} : {...line(piece), done: false}
        yield encoder.encode(`${JSON.stringify(object)}\n`)
      }
    } catch (error) {
      // After the first line the status is out; Ollama's clients read a line with `error` as the failure.
      yield encoder.encode(`${JSON.stringify({error: (error as Error).message})}\n`)
    } finally {
      await events.return?.()
    }
  }

  return {body: lines(), contentType: NDJSON, kind: 'bytes'}
}

const createdAt = () => new Date().toISOString()

export function ollamaRoutes(api: KernelApi): RouteDefinition[] {
  const chat: RouteDefinition<ChatRequest> = {
    body: chatSchema(api.schema),
    errorStyle: 'ollama',
    async handler({body, models, signal}) {
      const model = models.get<LlmOperations>(body.model)
      api.requireAbility(model, 'chat', 'chat (it has no chat template); use /api/generate')
      const slots: ImageSlot[] = []
      const ids: string[] = []
      const messages = body.messages.map((message, index): ChatTurn => {
        if (message.role === 'assistant' && message.tool_calls?.length) {
          const toolCalls = message.tool_calls.map((call) => ({arguments: JSON.stringify(call.function.arguments), id: `call_${randomBytes(9).toString('base64url')}`, name: call.function.name}))
          ids.push(...toolCalls.map((call) => call.id))
          return {content: message.content, role: 'assistant', toolCalls}
        }

        // Ollama's tool results name no call: each answers the earliest call not answered yet.
        if (message.role === 'tool') return {content: message.content, role: 'tool', toolCallId: ids.shift() ?? 'call_unanswered'}
        return {...shownWith(api, message.content, message.images, `messages[${index}]`, message.role, slots), role: message.role as ChatTurn['role']}
      })
      // As Ollama: a final assistant message is continued rather than answered.
      const last = body.messages.at(-1)
      const continueFinalMessage = last?.role === 'assistant' && !last.tool_calls?.length && body.messages.length > 1
      const tools = (body.tools ?? []).map((tool, index) => ({description: tool.function.description, name: tool.function.name, param: `tools[${index}].function.parameters`, parameters: tool.function.parameters}))
      const payload: ChatPayload = {...toSampling(body), ...thinkingOf(body), continueFinalMessage, messages, responseFormat: toFormat(body.format), toolChoice: 'auto', tools}
      await readImages(api, model, slots, signal)
      const events = await started(model.invoke('chat', payload, signal))
      return answer(api, events, body.stream !== false, ({calls, text, thinking}) => ({
        created_at: createdAt(),
        message: {content: text, role: 'assistant', ...(thinking ? {thinking} : {}), ...(calls.length > 0 ? {tool_calls: calls} : {})},
        model: body.model,
      }))
    },
    example: {body: {messages: [{content: 'Hello!', role: 'user'}], model: 'tiny-random-llm', options: {num_predict: 16}, stream: false}},
    method: 'POST',
    path: '/api/chat',
    permission: 'models:read',
    produces: ['application/json', NDJSON],
    summary: 'Ollama: chat with a model (NDJSON stream, or one object with stream false)',
    tag: 'ollama',
  }

  const generate: RouteDefinition<GenerateRequest> = {
    body: generateSchema(api.schema),
    errorStyle: 'ollama',
    async handler({body, models, signal}) {
      const model = models.get<LlmOperations>(body.model)
      const line = ({text, thinking}: Piece) => ({created_at: createdAt(), model: body.model, response: text, ...(thinking ? {thinking} : {})})
      // An empty prompt loads the model and answers at once, as Ollama does to preload one.
      if (!body.prompt) return body.stream === false ? {body: {...line({calls: [], text: '', thinking: ''}), done: true, done_reason: 'load'}, kind: 'json'} : preload(line)
      const sampling = toSampling(body)
      const slots: ImageSlot[] = []
      const templated = !body.raw && model.abilities.includes('chat')
      if (!templated && body.images?.length) throw api.errors.badRequest('`images` need the chat template: leave `raw` out, or send the prompt without images.', 'images')
      const prompt = templatedPrompt(api, body, sampling, slots)
      await readImages(api, model, slots, signal)
      const events = templated ? model.invoke('chat', prompt, signal) : rawCompletion(api, model, body, sampling, signal)
      return answer(api, await started(events), body.stream !== false, line)
    },
    example: {body: {model: 'tiny-random-llm', options: {num_predict: 16}, prompt: 'Once upon a time', stream: false}},
    method: 'POST',
    path: '/api/generate',
    permission: 'models:read',
    produces: ['application/json', NDJSON],
    summary: 'Ollama: generate from a prompt, in the model\'s chat template unless raw (NDJSON stream, or one object)',
    tag: 'ollama',
  }

  return [chat, generate]
}

/** A prompt in the model's chat template: the system text, then the prompt as the user's turn. */
function templatedPrompt(api: KernelApi, body: GenerateRequest, sampling: SamplingOptions, slots: ImageSlot[]): ChatPayload {
  const user: ChatTurn = {...shownWith(api, body.prompt ?? '', body.images, '', 'user', slots), role: 'user'}
  const messages: ChatTurn[] = [...(body.system ? [{content: body.system, role: 'system' as const}] : []), user]
  return {...sampling, ...thinkingOf(body), messages, responseFormat: toFormat(body.format)}
}

/** The prompt as it is (`raw`, or a model without a chat template), the system text before it. */
function rawCompletion(api: KernelApi, model: ModelHandle<LlmOperations>, body: GenerateRequest, sampling: SamplingOptions, signal: AbortSignal) {
  api.requireAbility(model, 'generate', 'complete text')
  if (body.format !== undefined) throw api.errors.create(400, 'unsupported', '`format` needs the chat template: leave `raw` out, or `format` out.', 'format')
  return model.invoke('complete', {...sampling, prompt: body.system ? `${body.system}\n\n${body.prompt}` : (body.prompt ?? '')}, signal)
}

function preload(line: (piece: Piece) => Record<string, unknown>) {
  const encoder = new TextEncoder()
  async function* lines() {
    yield encoder.encode(`${JSON.stringify({...line({calls: [], text: '', thinking: ''}), done: true, done_reason: 'load'})}\n`)
  }

  return {body: lines(), contentType: NDJSON, kind: 'bytes' as const}
}
