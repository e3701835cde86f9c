/**
 * `POST /v1/completions`, the OpenAI (legacy) text completion API. A prompt is text or token ids; a list of prompts
 * gets one choice per prompt (choice `index` = prompt position), generated concurrently.
 */
import type {GenerationEvent, Infer, KernelApi, LlmOperations, RouteDefinition} from 'service-toolkit'

import {randomUUID} from 'node:crypto'

import {NO_LOGPROBS, notSupported, refuseSeveralChoices, responseSchemas, samplingFields, started, toSampling, usageOf} from './openai-shapes.js'

/** OpenAI's default for this route, which differs from chat's "until the model stops". */
const DEFAULT_MAX_TOKENS = 16
const MAX_PROMPTS = 64

function completionSchema(s: KernelApi['schema']) {
  const tokens = s.array(s.integer({minimum: 0}), {minItems: 1})
  return s.object(
    {
      ...samplingFields(s),
      best_of: s.optional(s.nullable(s.integer({description: 'Only 1 is supported: one completion is generated per prompt.', maximum: 20, minimum: 1}))),
      echo: s.optional(s.nullable(s.boolean({description: 'Return the prompt before the completion.'}))),
      logprobs: s.optional(s.nullable(s.integer({description: 'Only null is supported: the engines return no log probabilities.', maximum: 5, minimum: 0}))),
      keep_alive: s.optional(s.keepAlive({description: 'Extension (Ollama\'s): how long the model stays loaded once idle, a duration such as "5m" or seconds; -1 keeps it loaded, 0 unloads it after this request.'})),
      model: s.string({description: 'Uid of a running model.', minLength: 1}),
      prompt: s.union(
        [s.string(), tokens, s.array(s.union([s.string(), tokens], 'a string or an array of token ids'), {maxItems: MAX_PROMPTS, minItems: 1})],
        `a string, an array of token ids, or an array of up to ${MAX_PROMPTS} prompts, each a string or an array of token ids`,
      ),
      suffix: s.optional(s.nullable(s.string({description: 'Not supported: fill-in-the-middle needs a model with infill tokens.'}))),
    },
    {title: 'CreateCompletionRequest'},
  )
}

type CompletionRequest = Infer<ReturnType<typeof completionSchema>>

/** The request's prompts, one per choice: `[1, 2]` is one prompt of two tokens, `[[1], "text"]` two prompts. */
function promptsOf(prompt: CompletionRequest['prompt']): Array<string | number[]> {
  if (typeof prompt === 'string') return [prompt]
  if (prompt.every((item) => typeof item === 'number')) return [prompt as number[]]
  return prompt as Array<string | number[]>
}

/** Interleaves several event streams as their events arrive, each event tagged with its stream's position. */
async function* merge<T>(sources: Array<AsyncIterable<T>>): AsyncGenerator<[number, T]> {
  const iterators = sources.map((source) => source[Symbol.asyncIterator]())
  const pending = new Map<number, Promise<[number, IteratorResult<T>]>>()
  const pull = (index: number) => pending.set(index, iterators[index].next().then((result) => [index, result]))
  for (const index of iterators.keys()) pull(index)
  try {
    while (pending.size > 0) {
      const [index, result] = await Promise.race(pending.values())
      if (result.done) {
        pending.delete(index)
        continue
      }

      pull(index)
      yield [index, result.value]
    }
  } finally {
    await Promise.all(iterators.map((iterator) => iterator.return?.()))
  }
}

/** Starts every prompt's generation; if the engine refuses one, the others are stopped and the refusal is the answer. */
async function startAll(streams: Array<AsyncIterable<GenerationEvent>>): Promise<Array<AsyncIterableIterator<GenerationEvent>>> {
  const results = await Promise.allSettled(streams.map((stream) => started(stream)))
  const refused = results.find((result) => result.status === 'rejected')
  if (!refused) return results.map((result) => (result as PromiseFulfilledResult<AsyncIterableIterator<GenerationEvent>>).value)
  await Promise.all(results.map((result) => result.status === 'fulfilled' && result.value.return?.()))
  throw refused.reason
}

const finishReasonOf = (reason: string) => (reason === 'length' ? 'length' : 'stop')

export function completionsRoute(api: KernelApi): RouteDefinition<CompletionRequest> {
  const {completion, completionChunk} = responseSchemas(api.schema)
  return {
    body: completionSchema(api.schema),
    events: completionChunk.json,
    example: {body: {max_tokens: 16, model: 'tiny-random-llm', prompt: 'Once upon a time'}},
    async handler({body, models, signal}) {
      const model = models.get<LlmOperations>(body.model)
      api.requireAbility(model, 'generate', 'complete text')
      if (body.suffix) throw api.errors.badRequest('`suffix` (fill-in-the-middle) is not supported; put all the text in `prompt`.', 'suffix')
      refuseSeveralChoices(api, body.n)
      if (body.logprobs !== null && body.logprobs !== undefined) throw notSupported(api, 'logprobs', NO_LOGPROBS, 'leave it out or set it to null')
      if ((body.best_of ?? 1) > 1) throw notSupported(api, 'best_of', 'one completion is generated per prompt', 'leave it out or set it to 1')
      const prompts = promptsOf(body.prompt)
      const sampling = toSampling(api, body, DEFAULT_MAX_TOKENS)
      const streams = await startAll(prompts.map((prompt) => model.invoke('complete', {...sampling, prompt}, signal)))
      const id = `cmpl-${randomUUID()}`
      const created = Math.floor(Date.now() / 1000)
      const shape = (choices: Array<{index: number; text: string; finish_reason: string | null}>) => ({
        choices: choices.map((choice) => ({...choice, logprobs: null})),
        created,
        id,
        model: body.model,
        object: 'text_completion',
      })
      // A text prompt is echoed as given; a token prompt as the engine's text of it, which comes with `start`.
      const echoed = (index: number) => (body.echo && typeof prompts[index] === 'string' ? (prompts[index] as string) : '')
      const echoOf = (event: GenerationEvent) => (body.echo && event.type === 'start' ? (event.prompt ?? '') : '')
      const usage: {completion: number; prompt: number; cached?: number} = {completion: 0, prompt: 0}
      const count = (event: Extract<GenerationEvent, {type: 'done'}>) => {
        usage.prompt += event.promptTokens
        usage.completion += event.completionTokens
        if (event.cachedTokens !== undefined) usage.cached = (usage.cached ?? 0) + event.cachedTokens
      }

      if (!body.stream) {
        const choices = prompts.map((_, index) => ({finish_reason: 'stop', index, text: echoed(index)}))
        for await (const [index, event] of merge(streams)) {
          if (event.type === 'start') choices[index].text += echoOf(event)
          else if (event.type === 'text') choices[index].text += event.text
          else if (event.type === 'done') {
            choices[index].finish_reason = finishReasonOf(event.finishReason)
            count(event)
          }
        }

        return {body: {...shape(choices), usage: usageOf(usage.prompt, usage.completion, usage.cached)}, kind: 'json'}
      }

      const includeUsage = body.stream_options?.include_usage === true
      async function* stream() {
        for (const index of prompts.keys()) if (echoed(index)) yield shape([{finish_reason: null, index, text: echoed(index)}])
        for await (const [index, event] of merge(streams)) {
          const echo = echoOf(event)
          if (echo) yield shape([{finish_reason: null, index, text: echo}])
          else if (event.type === 'text') yield shape([{finish_reason: null, index, text: event.text}])
          else if (event.type === 'done') {
            count(event)
            yield shape([{finish_reason: finishReasonOf(event.finishReason), index, text: ''}])
          }
        }

        if (includeUsage) yield {...shape([]), usage: usageOf(usage.prompt, usage.completion, usage.cached)}
      }

      return {events: stream(), kind: 'sse', terminator: '[DONE]'}
    },
    method: 'POST',
    path: '/v1/completions',
    permission: 'models:read',
    response: completion.json,
    summary: 'Text completion (OpenAI API): one choice per prompt; streaming with server-sent events when stream is true',
    tag: 'LLM',
  }
}
