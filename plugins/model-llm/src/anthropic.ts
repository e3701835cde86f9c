/**
 * The Anthropic Messages API under `/anthropic`: `POST /v1/messages` (streaming or not, with tools),
 * `POST /v1/messages/count_tokens` and `GET /v1/models`, so the official `@anthropic-ai/sdk` works with
 * `baseURL: <service>/anthropic`. Responses carry every field of the SDK's types (`Message`, `Usage`,
 * `ModelInfo`), null where this service has nothing to say; errors come in Anthropic's `{type: "error", error}` form
 * (the HTTP edge renders them for every path under /anthropic). The `anthropic-version` header is accepted and ignored.
 */
import type {ChatPart, ChatPayload, ChatTurn, GenerationEvent, Infer, KernelApi, LlmOperations, RouteDefinition, ToolChoice} from 'service-toolkit'

import {randomBytes} from 'node:crypto'

import {anthropicResponseSchemas, modelInfo} from './anthropic-shapes.js'
import {checkThinkingBudget, shownThinking, thinkingBlock, thinkingField, thinkingPayload} from './anthropic-thinking.js'
import {anthropicImage, IMAGE_BASE64_CHARACTERS, type ImageSlot, readImages, turnContent} from './images.js'
import {started} from './openai-shapes.js'

const TOOL_NAME = /^[\w-]{1,64}$/

function conversationFields(s: KernelApi['schema']) {
  const textBlock = s.object({text: s.string(), type: s.literal('text')}, {unknownKeys: 'strip'})
  // One schema for every block type, so a wrong field is reported for the block's own type (see toTurns).
  const block = s.object(
    {
      content: s.optional(
        s.union([s.string(), s.array(s.object({text: s.optional(s.string()), type: s.string()}, {unknownKeys: 'strip'}))], 'a string or an array of text blocks'),
      ),
      id: s.optional(s.string()),
      input: s.optional(s.unknown()),
      is_error: s.optional(s.boolean()),
      name: s.optional(s.string()),
      // An image block's picture: base64, or a URL.
      source: s.optional(s.object({data: s.optional(s.string({maxLength: IMAGE_BASE64_CHARACTERS})), media_type: s.optional(s.string({maxLength: 64})), type: s.string({enum: ['base64', 'url']}), url: s.optional(s.string({maxLength: 8192}))}, {unknownKeys: 'strip'})),
      text: s.optional(s.string()),
      tool_use_id: s.optional(s.string()),
      type: s.string({enum: ['text', 'image', 'document', 'tool_use', 'tool_result', 'thinking', 'redacted_thinking']}),
    },
    {unknownKeys: 'strip'},
  )
  const message = s.object({
    content: s.union([s.string(), s.array(block)], 'a string or an array of content blocks'),
    role: s.string({enum: ['user', 'assistant']}),
  })
  const tool = s.object(
    {
      description: s.optional(s.string()),
      input_schema: s.jsonSchema({description: 'JSON Schema of the tool input.'}),
      name: s.string({pattern: TOOL_NAME}),
      type: s.optional(s.nullable(s.literal('custom'))),
    },
    {unknownKeys: 'strip'},
  )
  return {
    messages: s.array(message, {description: 'The conversation so far, alternating user and assistant turns.', minItems: 1}),
    keep_alive: s.optional(s.keepAlive({description: 'Extension (Ollama\'s): how long the model stays loaded once idle, a duration such as "5m" or seconds; -1 keeps it loaded, 0 unloads it after this request.'})),
    model: s.string({description: 'Uid of a running model.', minLength: 1}),
    system: s.optional(s.union([s.string(), s.array(textBlock)], 'a string or an array of text blocks')),
    thinking: thinkingField(s),
    tool_choice: s.optional(
      s.object({
        disable_parallel_tool_use: s.optional(s.boolean()),
        name: s.optional(s.string()),
        type: s.string({enum: ['auto', 'any', 'tool', 'none']}),
      }),
    ),
    tools: s.optional(s.array(tool, {maxItems: 128})),
  }
}

function messagesSchema(s: KernelApi['schema']) {
  return s.object(
    {
      ...conversationFields(s),
      // At most 2^31 − 1, what llama.cpp counts in; past the room left in the context, generation stops there.
      max_tokens: s.integer({description: 'Upper bound on generated tokens.', maximum: s.INT32_MAX, minimum: 1}),
      metadata: s.optional(s.object({user_id: s.optional(s.nullable(s.string({maxLength: 256})))}, {description: 'Accepted and ignored.'})),
      service_tier: s.optional(s.string()),
      // An empty sequence is found at once, so it would end every answer before its first token.
      stop_sequences: s.optional(s.array(s.string({minLength: 1}), {maxItems: 16})),
      stream: s.optional(s.boolean()),
      temperature: s.optional(s.number({maximum: 1, minimum: 0})),
      top_k: s.optional(s.integer({maximum: s.INT32_MAX, minimum: 0})),
      top_p: s.optional(s.number({maximum: 1, minimum: 0})),
    },
    {title: 'AnthropicCreateMessageRequest'},
  )
}

const countSchema = (s: KernelApi['schema']) => s.object(conversationFields(s), {title: 'AnthropicCountTokensRequest'})

type Shapes = ReturnType<typeof anthropicResponseSchemas>
type Conversation = Infer<ReturnType<typeof countSchema>>
type MessagesRequest = Infer<ReturnType<typeof messagesSchema>>

/** Text blocks are separate pieces of text, so they are joined with a line break, as vLLM joins text parts. */
const TEXT_BLOCK_SEPARATOR = '\n'

const textOf = (content: string | Array<{text?: string}> | undefined) =>
  content === undefined ? '' : typeof content === 'string' ? content : content.flatMap((block) => (block.text === undefined ? [] : [block.text])).join(TEXT_BLOCK_SEPARATOR)

/**
 * Anthropic conversations as engine turns: the system prompt first; an assistant turn's `tool_use` blocks become
 * its tool calls; a user turn's `tool_result` blocks become tool turns (ahead of its text, which answers them).
 */
function toTurns(api: KernelApi, request: Conversation, slots: ImageSlot[]): ChatTurn[] {
  const turns: ChatTurn[] = []
  const system = textOf(request.system)
  if (system) turns.push({content: system, role: 'system'})
  const called = new Set<string>()
  for (const [index, message] of request.messages.entries()) {
    // As Anthropic's API: every turn says something, except a final assistant turn, which the answer continues.
    const last = index === request.messages.length - 1
    if (message.content.length === 0 && !(last && message.role === 'assistant'))
      throw api.errors.badRequest(`\`messages[${index}].content\` is empty; every message needs content, except a final assistant message.`, `messages[${index}].content`)
    if (typeof message.content === 'string') {
      turns.push({content: message.content, role: message.role as 'user' | 'assistant'})
      continue
    }

    const pieces: ChatPart[] = []
    const calls: NonNullable<ChatTurn['toolCalls']> = []
    for (const [position, block] of message.content.entries()) {
      const at = `messages[${index}].content[${position}]`
      const require = (field: 'id' | 'name' | 'text' | 'tool_use_id') => {
        if (block[field] === undefined || block[field] === '') throw api.errors.badRequest(`\`${at}.${field}\` is required in a ${block.type} block.`, `${at}.${field}`)
        return block[field]
      }

      if (block.type === 'text') pieces.push({text: require('text'), type: 'text'})
      else if (block.type === 'image') pieces.push(anthropicImage(api, block, at, message.role, slots))
      // Earlier reasoning, which chat templates leave out of the prompt.
      else if ((block.type === 'thinking' || block.type === 'redacted_thinking') && message.role === 'assistant') continue
      else if (block.type === 'tool_use') {
        if (message.role !== 'assistant') throw api.errors.badRequest(`\`${at}\`: tool_use blocks belong in assistant messages.`, at)
        const id = require('id')
        if (typeof block.input !== 'object' || block.input === null || Array.isArray(block.input))
          throw api.errors.badRequest(`\`${at}.input\` must be an object, the tool's input.`, `${at}.input`)
        called.add(id)
        calls.push({arguments: JSON.stringify(block.input), id, name: require('name')})
      } else if (block.type === 'tool_result') {
        if (message.role !== 'user') throw api.errors.badRequest(`\`${at}\`: tool_result blocks belong in user messages.`, at)
        const id = require('tool_use_id')
        if (!called.has(id)) throw api.errors.badRequest(`\`${at}.tool_use_id\` "${id}" matches no tool_use block of an earlier assistant message.`, `${at}.tool_use_id`)
        const result = textOf(block.content)
        turns.push({content: block.is_error ? `Error: ${result}` : result, role: 'tool', toolCallId: id})
      } else {
        throw api.errors.badRequest(`\`${at}\`: ${block.type} blocks are not supported; this service reads text, image, tool_use and tool_result blocks.`, `${at}.type`)
      }
    }

    const {content: text, parts} = turnContent(pieces)
    if (message.role === 'assistant') turns.push({content: text, role: 'assistant', ...(calls.length > 0 ? {toolCalls: calls} : {})})
    else if (text || parts) turns.push({content: text, ...(parts ? {parts} : {}), role: 'user'})
  }

  return turns
}

function toChatPayload(api: KernelApi, request: Conversation, slots: ImageSlot[]): Omit<ChatPayload, 'maxTokens'> {
  const tools = (request.tools ?? []).map((tool, index) => ({description: tool.description, name: tool.name, param: `tools[${index}].input_schema`, parameters: tool.input_schema}))
  const choice = request.tool_choice ?? {type: 'auto'}
  let toolChoice: ToolChoice = choice.type === 'any' ? 'required' : choice.type === 'none' ? 'none' : 'auto'
  if (choice.type === 'tool') {
    if (!choice.name) throw api.errors.badRequest('`tool_choice.name` is required when `tool_choice.type` is "tool".', 'tool_choice.name')
    if (!tools.some((tool) => tool.name === choice.name))
      throw api.errors.badRequest(`\`tool_choice.name\` "${choice.name}" is not one of the tools (${tools.map((tool) => tool.name).join(', ') || 'none given'}).`, 'tool_choice.name')
    toolChoice = {name: choice.name}
  }

  if (toolChoice === 'required' && tools.length === 0) throw api.errors.badRequest('`tool_choice` "any" needs `tools`.', 'tool_choice')
  const messages = toTurns(api, request, slots)
  // Anthropic's prefill: a final assistant turn is the start of the answer, which the model continues.
  const last = messages.at(-1)
  const continueFinalMessage = last?.role === 'assistant' && !last.toolCalls?.length
  return {
    messages,
    toolChoice,
    tools,
    ...(continueFinalMessage ? {continueFinalMessage} : {}),
    ...thinkingPayload(api, request.thinking),
  }
}

const id = (prefix: string) => `${prefix}_${randomBytes(12).toString('base64url')}`

/**
 * Anthropic's reckoning of a prompt: `cache_read_input_tokens` what the engine took from its cache, `input_tokens`
 * the rest, so the two add up to the whole prompt (what count_tokens answers).
 */
const promptUsage = (promptTokens: number, cachedTokens = 0) => ({cache_read_input_tokens: cachedTokens, input_tokens: promptTokens - cachedTokens})

function usageOf(promptTokens: number, outputTokens: number, cachedTokens = 0) {
  return {
    cache_creation: null,
    cache_creation_input_tokens: 0,
    ...promptUsage(promptTokens, cachedTokens),
    inference_geo: null,
    output_tokens: outputTokens,
    output_tokens_details: null,
    server_tool_use: null,
    service_tier: 'standard',
    speed: null,
  }
}

function stopOf(event: Extract<GenerationEvent, {type: 'done'}>) {
  if (event.finishReason === 'tool_calls') return {stop_reason: 'tool_use', stop_sequence: null}
  if (event.finishReason === 'length') return {stop_reason: 'max_tokens', stop_sequence: null}
  if (event.stopSequence !== undefined) return {stop_reason: 'stop_sequence', stop_sequence: event.stopSequence}
  return {stop_reason: 'end_turn', stop_sequence: null}
}

/** A tool's input as the model wrote it; input cut off by max_tokens is not JSON, and then shows as empty. */
function inputOf(json: string): unknown {
  try {
    return JSON.parse(json)
  } catch {
    return {}
  }
}

const toolUseBlock = (name: string, input: unknown) => ({caller: {type: 'direct'}, id: id('toolu'), input, name, type: 'tool_use'})

function messagesRoute(api: KernelApi, shapes: Shapes): RouteDefinition<MessagesRequest> {
  return {
    body: messagesSchema(api.schema),
    errorStyle: 'anthropic',
    events: shapes.events.json,
    example: {body: {max_tokens: 16, messages: [{content: 'Hello!', role: 'user'}], model: 'tiny-random-llm'}},
    async handler({body, models, signal}) {
      const model = models.get<LlmOperations>(body.model)
      api.requireAbility(model, 'chat', model.modelType === 'LLM' ? 'chat (it has no chat template)' : 'chat')
      checkThinkingBudget(api, body.thinking, body.max_tokens)
      const slots: ImageSlot[] = []
      const payload: ChatPayload = {
        ...toChatPayload(api, body, slots),
        maxTokens: body.max_tokens,
        stop: body.stop_sequences,
        temperature: body.temperature,
        topK: body.top_k,
        topP: body.top_p,
      }
      await readImages(api, model, slots, signal)
      const events = await started(model.invoke('chat', payload, signal))
      const message = {container: null, diagnostics: null, id: id('msg'), model: body.model, role: 'assistant', stop_details: null, type: 'message'}

      if (!body.stream) {
        let text = ''
        let thinking = ''
        const calls: Array<{name: string; json: string}> = []
        for await (const event of events) {
          if (event.type === 'text') text += event.text
          else if (event.type === 'reasoning') thinking += event.text
          else if (event.type === 'tool_call') calls[event.index] = {json: '', name: event.name}
          else if (event.type === 'tool_arguments') calls[event.index].json += event.text
          else if (event.type === 'done') {
            const content = [...(thinking ? [thinkingBlock(shownThinking(body.thinking, thinking))] : []), ...(text ? [{citations: null, text, type: 'text'}] : []), ...calls.map((call) => toolUseBlock(call.name, inputOf(call.json)))]
            return {body: {...message, content, ...stopOf(event), usage: usageOf(event.promptTokens, event.completionTokens, event.cachedTokens)}, kind: 'json'}
          }
        }

        throw api.errors.create(500, 'internal_error', 'the model ended without finishing its answer.')
      }

      // Blocks open lazily and close before the next one opens, so indices run 0, 1, … with matched starts and stops.
      async function* stream() {
        let open: 'thinking' | 'text' | 'tool' | undefined
        let index = -1
        const stop = () => [
          // A thinking block ends with its signature, as Anthropic's do; the SDK's stream accumulates it.
          ...(open === 'thinking' ? [{data: {delta: {signature: '', type: 'signature_delta'}, index, type: 'content_block_delta'}, event: 'content_block_delta'}] : []),
          ...(open ? [{data: {index, type: 'content_block_stop'}, event: 'content_block_stop'}] : []),
        ]
        const start = (contentBlock: Record<string, unknown>, kind: 'thinking' | 'text' | 'tool') => {
          const stopped = stop()
          open = kind
          index++
          return [...stopped, {data: {content_block: contentBlock, index, type: 'content_block_start'}, event: 'content_block_start'}]
        }

        let announced = false
        for await (const event of events) {
          if (!announced) {
            // Engines announce the prompt size first (`start`); one that does not still gets a message_start.
            announced = true
            const inputTokens = event.type === 'start' ? event.promptTokens : 0
            yield {data: {message: {...message, content: [], stop_reason: null, stop_sequence: null, usage: usageOf(inputTokens, 0)}, type: 'message_start'}, event: 'message_start'}
            yield {data: {type: 'ping'}, event: 'ping'}
          }

          if (event.type === 'reasoning') {
            if (open !== 'thinking') yield* start(thinkingBlock(''), 'thinking')
            const shown = shownThinking(body.thinking, event.text)
            if (shown) yield {data: {delta: {thinking: shown, type: 'thinking_delta'}, index, type: 'content_block_delta'}, event: 'content_block_delta'}
          } else if (event.type === 'text') {
            if (open !== 'text') yield* start({citations: null, text: '', type: 'text'}, 'text')
            yield {data: {delta: {text: event.text, type: 'text_delta'}, index, type: 'content_block_delta'}, event: 'content_block_delta'}
          } else if (event.type === 'tool_call') {
            yield* start(toolUseBlock(event.name, {}), 'tool')
          } else if (event.type === 'tool_arguments') {
            yield {data: {delta: {partial_json: event.text, type: 'input_json_delta'}, index, type: 'content_block_delta'}, event: 'content_block_delta'}
          } else if (event.type === 'done') {
            yield* stop()
            const usage = {cache_creation_input_tokens: 0, ...promptUsage(event.promptTokens, event.cachedTokens), output_tokens: event.completionTokens, output_tokens_details: null, server_tool_use: null}
            yield {data: {delta: {container: null, stop_details: null, ...stopOf(event)}, type: 'message_delta', usage}, event: 'message_delta'}
            yield {data: {type: 'message_stop'}, event: 'message_stop'}
          }
        }
      }

      return {events: stream(), kind: 'sse'}
    },
    method: 'POST',
    path: '/anthropic/v1/messages',
    permission: 'models:read',
    response: shapes.message.json,
    summary: 'Anthropic Messages API: text, thinking, tools, stop sequences; server-sent events when stream is true',
    tag: 'Anthropic',
  }
}

function countTokensRoute(api: KernelApi, shapes: Shapes): RouteDefinition<Conversation> {
  return {
    body: countSchema(api.schema),
    errorStyle: 'anthropic',
    example: {body: {messages: [{content: 'Hello!', role: 'user'}], model: 'tiny-random-llm'}},
    async handler({body, models, signal}) {
      const model = models.get<LlmOperations>(body.model)
      api.requireAbility(model, 'chat', 'chat, so it cannot count the tokens of a conversation')
      const slots: ImageSlot[] = []
      const payload = toChatPayload(api, body, slots)
      await readImages(api, model, slots, signal)
      for await (const event of model.invoke('count_tokens', payload, signal))
        return {body: {input_tokens: event.count}, kind: 'json'}
      throw api.errors.create(500, 'internal_error', 'the model did not count the tokens.')
    },
    method: 'POST',
    path: '/anthropic/v1/messages/count_tokens',
    permission: 'models:read',
    response: shapes.count.json,
    summary: 'Anthropic token counting: the input tokens a Messages request would use',
    tag: 'Anthropic',
  }
}

function modelRoutes(api: KernelApi, shapes: Shapes): RouteDefinition[] {
  return [
    {
      errorStyle: 'anthropic',
      async handler({models}) {
        const data = models.list().filter((model) => model.abilities.includes('chat')).map((model) => modelInfo(model))
        return {body: {data, first_id: data[0]?.id ?? null, has_more: false, last_id: data.at(-1)?.id ?? null}, kind: 'json'}
      },
      method: 'GET',
      path: '/anthropic/v1/models',
      permission: 'models:list',
      response: shapes.models.json,
      summary: 'Running chat models in Anthropic\'s list shape',
      tag: 'Anthropic',
    },
    {
      errorStyle: 'anthropic',
      example: {params: {model_id: 'tiny-random-llm'}},
      async handler({models, params}) {
        const model = models.get(params.model_id)
        api.requireAbility(model, 'chat', 'chat, so the Anthropic API does not serve it')
        return {body: modelInfo(model), kind: 'json'}
      },
      method: 'GET',
      path: '/anthropic/v1/models/:model_id',
      permission: 'models:list',
      response: shapes.modelInfo.json,
      summary: 'One running chat model in Anthropic\'s shape',
      tag: 'Anthropic',
    },
  ]
}

export function anthropicRoutes(api: KernelApi): RouteDefinition[] {
  const shapes = anthropicResponseSchemas(api.schema)
  const messages = messagesRoute(api, shapes)
  // Xinference serves Messages at the root as well, where clients set up for it send them.
  const atRoot = {...messages, path: '/v1/messages', summary: `${messages.summary} (also at the root, as Xinference serves it)`}
  return [messages, atRoot, countTokensRoute(api, shapes), ...modelRoutes(api, shapes)] as RouteDefinition[]
}
