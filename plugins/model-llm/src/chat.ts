/** `POST /v1/chat/completions`, the OpenAI chat API, streaming or not. */
import type {ChatTurn, GenerationEvent, Infer, KernelApi, ModelHandle, RouteDefinition} from 'service-toolkit'

import {randomUUID} from 'node:crypto'

import {samplingFields, toSampling, usageOf} from './openai-shapes.js'

function chatSchema(s: KernelApi['schema']) {
  const textPart = s.object({text: s.string(), type: s.literal('text')}, {unknownKeys: 'strip'})
  const message = s.object(
    {
      content: s.optional(
        s.nullable(s.union([s.string(), s.array(textPart)], 'a string or an array of {"type": "text", "text": …} parts')),
      ),
      name: s.optional(s.string()),
      role: s.string({enum: ['system', 'developer', 'user', 'assistant', 'tool']}),
      tool_call_id: s.optional(s.string()),
    },
    {title: 'ChatMessage'},
  )
  return s.object(
    {
      ...samplingFields(s),
      messages: s.array(message, {description: 'The conversation so far.', minItems: 1}),
      model: s.string({description: 'Uid of a running model.', minLength: 1}),
    },
    {title: 'CreateChatCompletionRequest'},
  )
}

type ChatRequest = Infer<ReturnType<typeof chatSchema>>

export function requireAbility(api: KernelApi, model: ModelHandle, ability: string, what: string) {
  if (!model.abilities.includes(ability))
    throw api.errors.badRequest(
      `model ${model.uid} (${model.modelType} ${model.modelName}) cannot ${what}; it can: ${model.abilities.join(', ') || 'nothing yet'}.`,
      'model',
    )
}

function toTurns(messages: ChatRequest['messages']): ChatTurn[] {
  return messages.map((message) => ({
    content: message.content === null || message.content === undefined ? '' : typeof message.content === 'string' ? message.content : message.content.map((part) => part.text).join(''),
    role: message.role === 'developer' ? 'system' : (message.role as ChatTurn['role']),
  }))
}

export function chatRoute(api: KernelApi): RouteDefinition<ChatRequest> {
  return {
    body: chatSchema(api.schema),
    async handler({body, models, signal}) {
      const model = models.get(body.model)
      requireAbility(api, model, 'chat', 'chat (it has no chat template); use /v1/completions')
      const payload = {...toSampling(body), messages: toTurns(body.messages)}
      const id = `chatcmpl-${randomUUID()}`
      const created = Math.floor(Date.now() / 1000)
      const events = model.invoke('chat', payload, signal) as AsyncIterable<GenerationEvent>

      if (!body.stream) {
        let content = ''
        for await (const event of events) {
          if (event.type === 'text') content += event.text
          else
            return {
              body: {
                choices: [{finish_reason: event.finishReason === 'length' ? 'length' : 'stop', index: 0, logprobs: null, message: {content, refusal: null, role: 'assistant'}}],
                created,
                id,
                model: body.model,
                object: 'chat.completion',
                usage: usageOf(event.promptTokens, event.completionTokens),
              },
              kind: 'json',
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
          if (event.type === 'text') {
            yield chunk({content: event.text}, null)
            continue
          }

          yield chunk({}, event.finishReason === 'length' ? 'length' : 'stop')
          if (includeUsage) yield {choices: [], created, id, model: body.model, object: 'chat.completion.chunk', usage: usageOf(event.promptTokens, event.completionTokens)}
        }
      }

      return {events: stream(), kind: 'sse', terminator: '[DONE]'}
    },
    method: 'POST',
    path: '/v1/chat/completions',
    permission: 'models:read',
    summary: 'Chat completion (OpenAI API), streaming with server-sent events when stream is true',
    tag: 'LLM',
  }
}
