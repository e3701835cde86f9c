/**
 * `POST /v1/responses`, OpenAI's Responses API, on the chat generation path every chat engine serves: input items
 * become chat turns, `text.format` the structured output chat has, function tools chat's tools, and the engine's
 * events the Response object or its stream (responses-run.ts). Stored responses and background ones live in the
 * ResponseLibrary (responses-stored.ts), with the routes that read, list, cancel and delete them.
 */
import type {ChatPayload, KernelApi, LlmOperations, ResponseFormat, RouteDefinition, ToolChoice} from 'service-toolkit'

import {started} from './openai-shapes.js'
import {inputItems, MAX_ITEMS, requestSchema, type ResponsesRequest, type StoredItem, toTurns} from './responses-input.js'
import {itemId, now, type ResponseObject, runResponse} from './responses-run.js'
import {responsesSchemas} from './responses-shapes.js'
import {ResponseLibrary, storedResponseRoutes} from './responses-stored.js'

/** The conversation a stored response keeps (its continued one's with its request's): held to this before any work. */
const MAX_STORED_CONVERSATION_BYTES = 8 * 1024 * 1024

function toolsOf(body: ResponsesRequest) {
  return (body.tools ?? []).map((tool, index) => ({description: tool.description ?? undefined, name: tool.name, param: `tools[${index}].parameters`, parameters: tool.parameters ?? undefined}))
}

function toolChoiceOf(api: KernelApi, body: ResponsesRequest, tools: Array<{name: string}>): ToolChoice {
  const choice = body.tool_choice ?? 'auto'
  const toolChoice: ToolChoice = typeof choice === 'string' ? (choice as ToolChoice) : {name: choice.name}
  if (toolChoice !== 'auto' && toolChoice !== 'none' && tools.length === 0) throw api.errors.badRequest('`tool_choice` asks for a function call, but the request has no `tools`.', 'tool_choice')
  if (typeof toolChoice === 'object' && !tools.some((tool) => tool.name === toolChoice.name))
    throw api.errors.badRequest(`\`tool_choice.name\` "${toolChoice.name}" is not one of the tools (${tools.map((tool) => tool.name).join(', ')}).`, 'tool_choice.name')
  return toolChoice
}

function formatOf(api: KernelApi, format: NonNullable<ResponsesRequest['text']>['format']): ResponseFormat | undefined {
  if (!format || format.type === 'text') return undefined
  if (format.type === 'json_object') return {type: 'json_object'}
  if (!format.name) throw api.errors.badRequest('`text.format.name` is required when `text.format.type` is "json_schema".', 'text.format.name')
  if (!format.schema) throw api.errors.badRequest('`text.format.schema` is required: give the JSON Schema the answer must match, or use {"type": "json_object"} for any JSON.', 'text.format.schema')
  return {param: 'text.format.schema', schema: format.schema, type: 'json_schema'}
}

/** Refused rather than ignored, as on the chat route: fields asking for what no engine here gives. */
function refuseUnsupported(api: KernelApi, body: ResponsesRequest): void {
  if (body.background && body.store === false) throw api.errors.badRequest('`background` responses are stored to be fetched later: leave `store` out or set it to true.', 'background')
  if (body.background && body.stream) throw api.errors.badRequest('`background` with `stream` is not supported: stream the response, or run it in the background and GET it.', 'stream')
  if (body.input === undefined && !body.previous_response_id) throw api.errors.badRequest('`input` is required: text, or a list of input items.', 'input')
}

/** The Response object as it begins: the request's settings echoed, no output yet. */
function newResponse(body: ResponsesRequest): ResponseObject {
  const effort = body.reasoning?.effort ?? null
  return {
    background: body.background === true,
    completed_at: null,
    created_at: now(),
    error: null,
    id: itemId('resp'),
    incomplete_details: null,
    instructions: body.instructions ?? null,
    max_output_tokens: body.max_output_tokens ?? null,
    metadata: body.metadata ?? {},
    model: body.model,
    object: 'response',
    output: [],
    parallel_tool_calls: body.parallel_tool_calls ?? true,
    previous_response_id: body.previous_response_id ?? null,
    reasoning: {effort, summary: body.reasoning?.summary ?? body.reasoning?.generate_summary ?? null},
    service_tier: 'default',
    status: 'in_progress',
    store: body.store !== false,
    temperature: body.temperature ?? 1,
    text: {format: body.text?.format ?? {type: 'text'}},
    tool_choice: body.tool_choice ?? 'auto',
    tools: (body.tools ?? []).map((tool) => ({description: tool.description ?? null, name: tool.name, parameters: tool.parameters ?? null, strict: tool.strict ?? true, type: 'function'})),
    top_p: body.top_p ?? 1,
    truncation: 'disabled',
    ...(body.user ? {user: body.user} : {}),
  }
}

export function responsesRoutes(api: KernelApi): RouteDefinition[] {
  const shapes = responsesSchemas(api.schema)
  const library = new ResponseLibrary(api)
  const create: RouteDefinition<ResponsesRequest> = {
    body: requestSchema(api),
    events: shapes.event.json,
    example: {body: {input: 'Hello!', max_output_tokens: 16, model: 'tiny-random-llm', store: false}},
    async handler({authority, body, models, signal}) {
      refuseUnsupported(api, body)
      const store = body.store !== false
      const earlier = body.previous_response_id ? await library.conversation(body.previous_response_id, authority) : []
      const context: StoredItem[] = [...earlier, ...inputItems(api, body.input)]
      if (context.length > MAX_ITEMS)
        throw api.errors.badRequest(`the conversation has ${context.length} items with those of \`previous_response_id\`; at most ${MAX_ITEMS} are taken. Start a new one.`, 'input')
      if (store && Buffer.byteLength(JSON.stringify(context)) > MAX_STORED_CONVERSATION_BYTES)
        throw api.errors.badRequest(
          `\`input\`: the conversation is more than the ${MAX_STORED_CONVERSATION_BYTES / 1024 / 1024} MiB a stored response keeps; send \`store\`: false to answer it without storing it.`,
          'input',
        )

      const model = models.get<LlmOperations>(body.model)
      api.requireAbility(model, 'chat', model.modelType === 'LLM' ? 'chat (it has no chat template)' : 'chat')
      const tools = toolsOf(body)
      const payload: ChatPayload = {
        maxTokens: body.max_output_tokens ?? undefined,
        messages: toTurns(api, context, body.instructions, earlier.length),
        responseFormat: formatOf(api, body.text?.format),
        temperature: body.temperature ?? undefined,
        toolChoice: toolChoiceOf(api, body, tools),
        tools,
        topP: body.top_p ?? undefined,
        ...(body.reasoning?.effort === 'none' ? {enableThinking: false} : {}),
      }
      const response = newResponse(body)
      const record = {context, owner: authority.username, response}
      const save = () => (store ? library.save(record) : Promise.resolve())

      if (body.background) {
        library.checkRoomToRun()
        const controller = new AbortController()
        const events = await started(model.invoke('chat', payload, controller.signal))
        await library.runInBackground(record, runResponse(response, events).events, controller)
        return {body: structuredClone(response), kind: 'json'}
      }

      // Saved before the stream ends, so that a client reading the stored response once the stream is over finds it.
      const run = runResponse(response, await started(model.invoke('chat', payload, signal)), save)
      if (!body.stream) {
        for await (const _ of run.events);
        return {body: response, kind: 'json'}
      }

      return {
        errorEvent: run.errorEvent,
        events: run.events,
        kind: 'sse',
      }
    },
    method: 'POST',
    path: '/v1/responses',
    permission: 'models:read',
    response: shapes.response.json,
    summary: 'OpenAI Responses API: text, reasoning, function tools, text.format; stored and continued by previous_response_id; streamed when stream is true, or run in the background',
    tag: 'LLM',
  }
  return [create, ...storedResponseRoutes(api, library, shapes)]
}
