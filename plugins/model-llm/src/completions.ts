/** `POST /v1/completions`, the OpenAI (legacy) text completion API. */
import type {GenerationEvent, Infer, KernelApi, RouteDefinition} from 'service-toolkit'

import {randomUUID} from 'node:crypto'

import {requireAbility} from './chat.js'
import {samplingFields, toSampling, usageOf} from './openai-shapes.js'

/** OpenAI's default for this route, which differs from chat's "until the model stops". */
const DEFAULT_MAX_TOKENS = 16

function completionSchema(s: KernelApi['schema']) {
  return s.object(
    {
      ...samplingFields(s),
      echo: s.optional(s.nullable(s.boolean({description: 'Return the prompt before the completion.'}))),
      model: s.string({description: 'Uid of a running model.', minLength: 1}),
      prompt: s.union([s.string(), s.array(s.string(), {maxItems: 1, minItems: 1})], 'a string (or an array holding one string)'),
    },
    {title: 'CreateCompletionRequest'},
  )
}

type CompletionRequest = Infer<ReturnType<typeof completionSchema>>

export function completionsRoute(api: KernelApi): RouteDefinition<CompletionRequest> {
  return {
    body: completionSchema(api.schema),
    async handler({body, models, signal}) {
      const model = models.get(body.model)
      requireAbility(api, model, 'generate', 'complete text')
      const prompt = Array.isArray(body.prompt) ? body.prompt[0] : body.prompt
      const events = model.invoke('complete', {...toSampling(body, DEFAULT_MAX_TOKENS), prompt}, signal) as AsyncIterable<GenerationEvent>
      const id = `cmpl-${randomUUID()}`
      const created = Math.floor(Date.now() / 1000)
      const shape = (text: string, finishReason: string | null) => ({
        choices: [{finish_reason: finishReason, index: 0, logprobs: null, text}],
        created,
        id,
        model: body.model,
        object: 'text_completion',
      })
      const echo = body.echo ? prompt : ''

      if (!body.stream) {
        let text = echo
        for await (const event of events) {
          if (event.type === 'text') text += event.text
          else
            return {
              body: {...shape(text, event.finishReason === 'length' ? 'length' : 'stop'), usage: usageOf(event.promptTokens, event.completionTokens)},
              kind: 'json',
            }
        }

        throw api.errors.create(500, 'internal_error', 'the model ended without finishing its completion.')
      }

      const includeUsage = body.stream_options?.include_usage === true
      async function* stream() {
        if (echo) yield shape(echo, null)
        for await (const event of events) {
          if (event.type === 'text') yield shape(event.text, null)
          else {
            yield shape('', event.finishReason === 'length' ? 'length' : 'stop')
            if (includeUsage) yield {...shape('', null), choices: [], usage: usageOf(event.promptTokens, event.completionTokens)}
          }
        }
      }

      return {events: stream(), kind: 'sse', terminator: '[DONE]'}
    },
    method: 'POST',
    path: '/v1/completions',
    permission: 'models:read',
    summary: 'Text completion (OpenAI API), streaming with server-sent events when stream is true',
    tag: 'LLM',
  }
}
