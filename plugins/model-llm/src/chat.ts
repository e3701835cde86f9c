/** `POST /v1/chat/completions`, the OpenAI chat API, streaming or not, with tools and structured output. */
import type {ChatPayload, ChatTurn, GenerationEvent, Infer, KernelApi, LlmOperations, ResponseFormat, RouteDefinition, ToolChoice} from 'service-toolkit'

import {randomBytes, randomUUID} from 'node:crypto'

import {IMAGE_BASE64_CHARACTERS, type ImageSlot, imageSlot, readImages, turnContent} from './images.js'
import {jsonTextWithin, NO_LOGPROBS, notSupported, refuseSeveralChoices, responseSchemas, samplingFields, started, toSampling, usageOf} from './openai-shapes.js'

/** OpenAI's rule for function names. */
const TOOL_NAME = /^[\w-]{1,64}$/
/** A data URL of the largest picture the service reads, with room for its header. */
const DATA_URL_CHARACTERS = IMAGE_BASE64_CHARACTERS + 256

function chatSchema(s: KernelApi['schema']) {
  // One schema for both part types, so a missing field is reported for the part's own type (see contentOf).
  const part = s.object(
    {
      image_url: s.optional(
        s.object(
          {
            detail: s.optional(s.string({description: 'Accepted; low, high or auto.', enum: ['auto', 'low', 'high']})),
            url: s.string({description: 'An http(s) URL or a data URL (base64) of a PNG, JPEG, WebP or GIF picture.', maxLength: DATA_URL_CHARACTERS, minLength: 1}),
          },
          {unknownKeys: 'strip'},
        ),
      ),
      text: s.optional(s.string()),
      type: s.string({enum: ['text', 'image_url']}),
    },
    {unknownKeys: 'strip'},
  )
  const toolCall = s.object({
    function: s.object({arguments: s.refine(s.string(), jsonTextWithin(s)), name: s.string({minLength: 1})}),
    id: s.string({minLength: 1}),
    type: s.literal('function'),
  })
  const message = s.object(
    {
      content: s.optional(
        s.nullable(s.union([s.string(), s.array(part, {minItems: 1})], 'a string or a non-empty array of text and image_url parts')),
      ),
      name: s.optional(s.string()),
      // An answer's reasoning, sent back with it; chat templates leave past reasoning out of the prompt.
      reasoning_content: s.optional(s.nullable(s.string())),
      refusal: s.optional(s.nullable(s.string())),
      role: s.string({enum: ['system', 'developer', 'user', 'assistant', 'tool']}),
      tool_call_id: s.optional(s.string({minLength: 1})),
      tool_calls: s.optional(s.nullable(s.array(toolCall))),
    },
    {title: 'ChatMessage'},
  )
  const tool = s.object({
    function: s.object({
      description: s.optional(s.string()),
      name: s.string({pattern: TOOL_NAME}),
      parameters: s.optional(s.jsonSchema({description: 'JSON Schema of the arguments.'})),
      strict: s.optional(s.nullable(s.boolean())),
    }),
    type: s.literal('function'),
  })
  const toolChoice = s.union(
    [s.string({enum: ['none', 'auto', 'required']}), s.object({function: s.object({name: s.string()}), type: s.literal('function')})],
    '"none", "auto", "required" or {"type": "function", "function": {"name": …}}',
  )
  const responseFormat = s.object({
    json_schema: s.optional(
      s.object({
        description: s.optional(s.string()),
        name: s.string({pattern: TOOL_NAME}),
        schema: s.optional(s.jsonSchema()),
        strict: s.optional(s.nullable(s.boolean())),
      }),
    ),
    type: s.string({enum: ['text', 'json_object', 'json_schema']}),
  })
  return s.object(
    {
      ...samplingFields(s),
      ...thinkingFields(s),
      add_generation_prompt: s.optional(
        s.nullable(s.boolean({description: 'vLLM extension: start a new assistant turn after the messages (the default); false only with continue_final_message.'})),
      ),
      continue_final_message: s.optional(
        s.nullable(s.boolean({description: 'vLLM extension: continue the final message, an assistant message, instead of answering after it (a prefill).'})),
      ),
      logprobs: s.optional(s.nullable(s.boolean({description: 'Only false is supported: the engines return no log probabilities.'}))),
      messages: s.array(message, {description: 'The conversation so far.', minItems: 1}),
      keep_alive: s.optional(s.keepAlive({description: 'Extension (Ollama\'s): how long the model stays loaded once idle, a duration such as "5m" or seconds; -1 keeps it loaded, 0 unloads it after this request.'})),
      model: s.string({description: 'Uid of a running model.', minLength: 1}),
      parallel_tool_calls: s.optional(s.nullable(s.boolean({description: 'Accepted; a forced call (tool_choice required or named) is always one call.'}))),
      // Accepted and ignored, as metadata and user: OpenAI's keys for its own prompt cache and abuse detection.
      prompt_cache_key: s.optional(s.nullable(s.string())),
      response_format: s.optional(s.nullable(responseFormat)),
      safety_identifier: s.optional(s.nullable(s.string({maxLength: 64}))),
      tool_choice: s.optional(s.nullable(toolChoice)),
      tools: s.optional(s.nullable(s.array(tool, {maxItems: 128}))),
      top_logprobs: s.optional(s.nullable(s.integer({description: 'Only 0 is supported, as for logprobs.', maximum: 20, minimum: 0}))),
    },
    {title: 'CreateChatCompletionRequest'},
  )
}

/**
 * The switch of hybrid reasoning models: `enable_thinking` at the top, as Xinference and Dify send it, among the
 * template's arguments, as vLLM takes it (`thinking` is the name some templates read, and Xinference sets both), or
 * `thinking: {"type": …}` at the top, Zhipu's and Kimi's form, which Dify sends beside the others.
 */
function thinkingFields(s: KernelApi['schema']) {
  const enableThinking = s.boolean({description: 'False: a hybrid reasoning model (Qwen3) answers without thinking, and no model returns reasoning.'})
  return {
    chat_template_kwargs: s.optional(
      s.nullable(
        s.object(
          {enable_thinking: s.optional(s.nullable(enableThinking)), thinking: s.optional(s.nullable(s.boolean({description: 'The same switch as enable_thinking.'})))},
          {description: "Arguments of the model's chat template; those it reads that this service knows."},
        ),
      ),
    ),
    enable_thinking: s.optional(s.nullable(enableThinking)),
    thinking: s.optional(
      s.nullable(s.object({type: s.string({description: 'enabled or disabled, as enable_thinking true or false.', enum: ['enabled', 'disabled']})}, {unknownKeys: 'strip'})),
    ),
  }
}

type ChatRequest = Infer<ReturnType<typeof chatSchema>>
type Message = ChatRequest['messages'][number]

/** A message's text, and its parts when it shows pictures, whose sources join `slots`. */
function contentOf(api: KernelApi, message: Message, index: number, slots: ImageSlot[]): Pick<ChatTurn, 'content' | 'parts'> {
  if (message.content === null || message.content === undefined) return {content: ''}
  if (typeof message.content === 'string') return {content: message.content}
  return turnContent(
    message.content.map((part, position) => {
      const at = `messages[${index}].content[${position}]`
      if (part.type === 'text') {
        if (part.text === undefined) throw api.errors.badRequest(`\`${at}.text\` is required in a text part.`, `${at}.text`)
        return {text: part.text, type: 'text'}
      }

      if (!part.image_url) throw api.errors.badRequest(`\`${at}.image_url\` is required in an image_url part: {"url": …}.`, `${at}.image_url`)
      if (message.role !== 'user') throw api.errors.badRequest(`\`${at}\`: image_url parts belong in user messages.`, at)
      return imageSlot({detail: part.image_url.detail, field: `${at}.image_url.url`, url: part.image_url.url}, slots)
    }),
  )
}

/** Whether the request turns thinking on or off, from any of the fields that can say so, which must agree. */
function thinkingOf(api: KernelApi, body: ChatRequest): Pick<ChatPayload, 'enableThinking'> {
  const fields: Array<[string, boolean | null | undefined]> = [
    ['enable_thinking', body.enable_thinking],
    ['chat_template_kwargs.enable_thinking', body.chat_template_kwargs?.enable_thinking],
    ['chat_template_kwargs.thinking', body.chat_template_kwargs?.thinking],
    ['thinking.type', body.thinking ? body.thinking.type === 'enabled' : undefined],
  ]
  const said = fields.filter((entry): entry is [string, boolean] => typeof entry[1] === 'boolean')
  const disagreeing = said.find(([, value]) => value !== said[0][1])
  if (disagreeing)
    throw api.errors.badRequest(`\`${disagreeing[0]}\` is ${disagreeing[1]} but \`${said[0][0]}\` is ${said[0][1]}; give the thinking switch once, or the same value everywhere.`, disagreeing[0])
  return said.length > 0 ? {enableThinking: said[0][1]} : {}
}

/**
 * Checks what the schema cannot express: one choice and no log probabilities are asked for, every message has content but an
 * assistant's that calls tools, tool results answer earlier calls, the tool choice names a given tool.
 */
function toPayload(api: KernelApi, body: ChatRequest, slots: ImageSlot[]): ChatPayload {
  refuseSeveralChoices(api, body.n)
  if (body.logprobs) throw notSupported(api, 'logprobs', NO_LOGPROBS, 'leave it out or set it to false')
  if (body.top_logprobs) throw notSupported(api, 'top_logprobs', NO_LOGPROBS, 'leave it out or set it to 0')
  const called = new Set<string>()
  const messages = body.messages.map((message, index): ChatTurn => {
    if ((message.content === null || message.content === undefined) && !(message.role === 'assistant' && message.tool_calls?.length))
      throw api.errors.badRequest(
        `\`messages[${index}].content\` is required: a ${message.role} message needs its text${message.role === 'assistant' ? ', unless it has tool_calls' : ''}.`,
        `messages[${index}].content`,
      )
    const {content, parts} = contentOf(api, message, index, slots)
    if (message.role === 'tool') {
      if (!message.tool_call_id) throw api.errors.badRequest(`\`messages[${index}].tool_call_id\` is required: a tool message answers a call of an earlier assistant message.`, `messages[${index}].tool_call_id`)
      if (!called.has(message.tool_call_id))
        throw api.errors.badRequest(`\`messages[${index}].tool_call_id\` "${message.tool_call_id}" matches no tool call of an earlier assistant message.`, `messages[${index}].tool_call_id`)
      return {content, role: 'tool', toolCallId: message.tool_call_id}
    }

    if (message.role === 'assistant' && message.tool_calls?.length) {
      for (const call of message.tool_calls) called.add(call.id)
      return {content, role: 'assistant', toolCalls: message.tool_calls.map((call) => ({arguments: call.function.arguments, id: call.id, name: call.function.name}))}
    }

    return {content, ...(parts ? {parts} : {}), role: message.role === 'developer' ? 'system' : (message.role as ChatTurn['role'])}
  })

  const tools = (body.tools ?? []).map((tool, index) => ({
    description: tool.function.description,
    name: tool.function.name,
    param: `tools[${index}].function.parameters`,
    parameters: tool.function.parameters,
  }))
  const choice = body.tool_choice ?? 'auto'
  const toolChoice: ToolChoice = typeof choice === 'string' ? (choice as ToolChoice) : {name: choice.function.name}
  if (toolChoice !== 'auto' && toolChoice !== 'none' && tools.length === 0)
    throw api.errors.badRequest('`tool_choice` asks for a tool call, but the request has no `tools`.', 'tool_choice')
  if (typeof toolChoice === 'object' && !tools.some((tool) => tool.name === toolChoice.name))
    throw api.errors.badRequest(`\`tool_choice\` names the function "${toolChoice.name}", which is not in \`tools\` (${tools.map((tool) => tool.name).join(', ')}).`, 'tool_choice')

  const continueFinalMessage = continuesFinalMessage(api, body)
  return {...toSampling(api, body), messages, responseFormat: toResponseFormat(api, body.response_format), toolChoice, tools, ...(continueFinalMessage ? {continueFinalMessage} : {})}
}

/**
 * vLLM's opt-in prefill: OpenAI's API always answers in a new assistant turn, so a final assistant message is
 * continued only when `continue_final_message` asks for it (and, as in vLLM, not together with add_generation_prompt).
 */
function continuesFinalMessage(api: KernelApi, body: ChatRequest): boolean {
  if (body.continue_final_message !== true) {
    if (body.add_generation_prompt === false)
      throw api.errors.badRequest('`add_generation_prompt` false is supported only with `continue_final_message` true, which continues a final assistant message.', 'add_generation_prompt')
    return false
  }

  if (body.add_generation_prompt === true)
    throw api.errors.badRequest('`continue_final_message` and `add_generation_prompt` cannot both be true: the answer either continues the final message or starts a new turn.', 'continue_final_message')
  const index = body.messages.length - 1
  const last = body.messages[index]
  if (last.role !== 'assistant' || last.tool_calls?.length)
    throw api.errors.badRequest(
      `\`continue_final_message\` continues the final message, which must be an assistant message without tool_calls; messages[${index}] is ${last.role === 'assistant' ? 'one with tool_calls' : `a ${last.role} message`}.`,
      'continue_final_message',
    )
  return true
}

function toResponseFormat(api: KernelApi, format: ChatRequest['response_format']): ResponseFormat | undefined {
  if (!format || format.type === 'text') return undefined
  if (format.type === 'json_object') return {type: 'json_object'}
  if (!format.json_schema) throw api.errors.badRequest('`response_format.json_schema` is required when `response_format.type` is "json_schema".', 'response_format.json_schema')
  if (!format.json_schema.schema)
    throw api.errors.badRequest('`response_format.json_schema.schema` is required: give the JSON Schema the answer must match, or use {"type": "json_object"} for any JSON.', 'response_format.json_schema.schema')
  return {param: 'response_format.json_schema.schema', schema: format.json_schema.schema, type: 'json_schema'}
}

const finishReasonOf = (reason: string) => (reason === 'length' || reason === 'tool_calls' ? reason : 'stop')
const toolCallId = () => `call_${randomBytes(12).toString('base64url')}`

export function chatRoute(api: KernelApi): RouteDefinition<ChatRequest> {
  const {chat, chatChunk} = responseSchemas(api.schema)
  return {
    body: chatSchema(api.schema),
    events: chatChunk.json,
    example: {body: {max_tokens: 16, messages: [{content: 'Hello!', role: 'user'}], model: 'tiny-random-llm'}},
    async handler({body, models, signal}) {
      const model = models.get<LlmOperations>(body.model)
      api.requireAbility(model, 'chat', model.modelType === 'LLM' ? 'chat (it has no chat template); use /v1/completions' : 'chat')
      const id = `chatcmpl-${randomUUID()}`
      const created = Math.floor(Date.now() / 1000)
      const slots: ImageSlot[] = []
      const payload = {...toPayload(api, body, slots), ...thinkingOf(api, body)}
      await readImages(api, model, slots, signal)
      const events = await started(model.invoke('chat', payload, signal))

      if (!body.stream) {
        let content = ''
        let reasoning = ''
        const calls: Array<{id: string; type: 'function'; function: {name: string; arguments: string}}> = []
        for await (const event of events) {
          if (event.type === 'text') content += event.text
          else if (event.type === 'reasoning') reasoning += event.text
          else if (event.type === 'tool_call') calls[event.index] = {function: {arguments: '', name: event.name}, id: toolCallId(), type: 'function'}
          else if (event.type === 'tool_arguments') calls[event.index].function.arguments += event.text
          else if (event.type === 'done') {
            // As vLLM answers: null reasoning from a model that did not think.
            const message = {
              content: calls.length > 0 && content === '' ? null : content,
              reasoning_content: reasoning || null,
              refusal: null,
              role: 'assistant',
              ...(calls.length > 0 ? {tool_calls: calls} : {}),
            }
            return {
              body: {
                choices: [{finish_reason: finishReasonOf(event.finishReason), index: 0, logprobs: null, message}],
                created,
                id,
                model: body.model,
                object: 'chat.completion',
                usage: usageOf(event.promptTokens, event.completionTokens, event.cachedTokens),
              },
              kind: 'json',
            }
          }
        }

        throw api.errors.create(500, 'internal_error', 'the model ended without finishing its answer.')
      }

      const includeUsage = body.stream_options?.include_usage === true
      const chunk = (delta: Record<string, unknown>, finishReason: string | null) => ({
        choices: [{delta, finish_reason: finishReason, index: 0, logprobs: null}],
        created,
        id,
        model: body.model,
        object: 'chat.completion.chunk',
        ...(includeUsage ? {usage: null} : {}),
      })
      async function* stream() {
        yield chunk({content: '', role: 'assistant'}, null)
        for await (const event of events) {
          if (event.type === 'text') yield chunk({content: event.text}, null)
          else if (event.type === 'reasoning') yield chunk({reasoning_content: event.text}, null)
          else if (event.type === 'tool_call')
            yield chunk({tool_calls: [{function: {arguments: '', name: event.name}, id: toolCallId(), index: event.index, type: 'function'}]}, null)
          else if (event.type === 'tool_arguments') yield chunk({tool_calls: [{function: {arguments: event.text}, index: event.index}]}, null)
          else if (event.type === 'done') {
            // With content, empty: Xinference's last delta has it, and LangChain's ChatXinference reads it from every delta.
            yield chunk({content: ''}, finishReasonOf(event.finishReason))
            if (includeUsage) yield {choices: [], created, id, model: body.model, object: 'chat.completion.chunk', usage: usageOf(event.promptTokens, event.completionTokens, event.cachedTokens)}
          }
        }
      }

      return {events: stream(), kind: 'sse', terminator: '[DONE]'}
    },
    method: 'POST',
    path: '/v1/chat/completions',
    permission: 'models:read',
    response: chat.json,
    summary: 'Chat completion (OpenAI API) with tools and response_format; streaming with server-sent events when stream is true',
    tag: 'LLM',
  }
}
