/**
 * One Responses API generation: the engine's chat events as the `Response` object and the stream events OpenAI
 * defines for it. Each output item opens when its first piece arrives and closes before the next one opens, so a
 * stream reads reasoning, then the message, then function calls, each added, filled and done in turn.
 */
import type {GenerationEvent} from 'service-toolkit'

import {randomBytes} from 'node:crypto'

export const itemId = (prefix: string) => `${prefix}_${randomBytes(12).toString('hex')}`

type Item = Record<string, unknown> & {id: string; type: string}
export type ResponseObject = Record<string, unknown> & {id: string; output: Item[]; status: string}
/** A stream event as the SSE writer sends it: `event: <type>`, then its fields, the sequence number last, as `data`. */
export interface StreamEvent {
  data: Record<string, unknown> & {sequence_number: number; type: string}
  event: string
}

export const now = () => Math.floor(Date.now() / 1000)

/** OpenAI's usage; the engines do not count reasoning apart from the answer, nor write to a cache a request can see. */
export const usageOf = (event: Extract<GenerationEvent, {type: 'done'}>) => ({
  input_tokens: event.promptTokens,
  input_tokens_details: {cache_write_tokens: 0, cached_tokens: event.cachedTokens ?? 0},
  output_tokens: event.completionTokens,
  output_tokens_details: {reasoning_tokens: 0},
  total_tokens: event.promptTokens + event.completionTokens,
})

export interface ResponseRun {
  /** The stream's events, numbered; a caller that does not stream drains it for the Response it fills. */
  events: AsyncGenerator<StreamEvent>
  /** The event a failed stream ends with, numbered after the events sent. */
  errorEvent(error: {code: string; message: string; param: string | null}): StreamEvent
}

const named = (data: StreamEvent['data']): StreamEvent => ({data, event: data.type})

/**
 * Runs `events` into `response` (its `output`, `status`, `usage`), then awaits `ended` (a stored response's save)
 * when the engine's events end without an error. The response is `in_progress` on entry and completed, incomplete
 * (max_output_tokens) or, when the engine stopped on an abort, cancelled when this ends. An event carries the live
 * response and items, not copies: a stream serializes each event before it asks for the next (sse.ts), and the
 * other callers drop them. Each event is built once, numbered as it is built, its number the last field as the
 * stream has always written it (test/unit/responses-stream.test.ts holds the bytes): a text delta is an event a
 * token, and numbering them in a later pass (an object spread and a generator step each) was per-token work chat's
 * stream does not do.
 */
export function runResponse(response: ResponseObject, events: AsyncIterable<GenerationEvent>, ended?: () => Promise<void>): ResponseRun {
  let sequence = 0
  let open: Item | undefined
  let text = ''
  const outputIndex = () => response.output.length - 1

  function* close(): Generator<StreamEvent> {
    if (!open) return
    const item = open
    open = undefined
    const itemId = item.id
    const index = outputIndex()
    if (item.type === 'reasoning') {
      const part = {text, type: 'summary_text'}
      item.summary = [part]
      yield named({item_id: itemId, output_index: index, summary_index: 0, text, type: 'response.reasoning_summary_text.done', sequence_number: sequence++})
      yield named({item_id: itemId, output_index: index, part, summary_index: 0, type: 'response.reasoning_summary_part.done', sequence_number: sequence++})
    } else if (item.type === 'message') {
      const part = {annotations: [], logprobs: [], text, type: 'output_text'}
      item.content = [part]
      yield named({item_id: itemId, output_index: index, content_index: 0, logprobs: [], text, type: 'response.output_text.done', sequence_number: sequence++})
      yield named({item_id: itemId, output_index: index, content_index: 0, part, type: 'response.content_part.done', sequence_number: sequence++})
    } else {
      item.arguments = text
      yield named({item_id: itemId, output_index: index, arguments: text, name: item.name, type: 'response.function_call_arguments.done', sequence_number: sequence++})
    }

    item.status = 'completed'
    yield named({item, output_index: index, type: 'response.output_item.done', sequence_number: sequence++})
  }

  function* start(item: Item): Generator<StreamEvent> {
    yield* close()
    response.output.push(item)
    open = item
    text = ''
    const index = outputIndex()
    yield named({item, output_index: index, type: 'response.output_item.added', sequence_number: sequence++})
    if (item.type === 'reasoning')
      yield named({item_id: item.id, output_index: index, part: {text: '', type: 'summary_text'}, summary_index: 0, type: 'response.reasoning_summary_part.added', sequence_number: sequence++})
    if (item.type === 'message')
      yield named({
        item_id: item.id,
        output_index: index,
        content_index: 0,
        part: {annotations: [], logprobs: [], text: '', type: 'output_text'},
        type: 'response.content_part.added',
        sequence_number: sequence++,
      })
  }

  async function* generate(): AsyncGenerator<StreamEvent> {
    yield named({response, type: 'response.created', sequence_number: sequence++})
    yield named({response, type: 'response.in_progress', sequence_number: sequence++})
    for await (const event of events) {
      if (event.type === 'reasoning') {
        if (open?.type !== 'reasoning') yield* start({id: itemId('rs'), summary: [], type: 'reasoning'})
        text += event.text
        yield named({delta: event.text, item_id: open!.id, output_index: outputIndex(), summary_index: 0, type: 'response.reasoning_summary_text.delta', sequence_number: sequence++})
      } else if (event.type === 'text') {
        if (open?.type !== 'message') yield* start({content: [], id: itemId('msg'), role: 'assistant', status: 'in_progress', type: 'message'})
        text += event.text
        yield named({content_index: 0, delta: event.text, item_id: open!.id, logprobs: [], output_index: outputIndex(), type: 'response.output_text.delta', sequence_number: sequence++})
      } else if (event.type === 'tool_call') {
        yield* start({arguments: '', call_id: itemId('call'), id: itemId('fc'), name: event.name, status: 'in_progress', type: 'function_call'})
      } else if (event.type === 'tool_arguments') {
        text += event.text
        yield named({delta: event.text, item_id: open!.id, output_index: outputIndex(), type: 'response.function_call_arguments.delta', sequence_number: sequence++})
      } else if (event.type === 'done') {
        yield* close()
        response.usage = usageOf(event)
        // An abort is a cancelled background response, which no stream follows.
        if (event.finishReason === 'abort') response.status = 'cancelled'
        else if (event.finishReason === 'length') {
          response.status = 'incomplete'
          response.incomplete_details = {reason: 'max_output_tokens'}
          yield named({response, type: 'response.incomplete', sequence_number: sequence++})
        } else {
          response.status = 'completed'
          response.completed_at = now()
          yield named({response, type: 'response.completed', sequence_number: sequence++})
        }
      }
    }

    await ended?.()
  }

  return {
    errorEvent: (error) => named({code: error.code, message: error.message, param: error.param, sequence_number: sequence++, type: 'error'}),
    events: generate(),
  }
}

/** The text of the response's messages, as the SDKs' `output_text`. */
export const outputText = (response: ResponseObject) =>
  response.output.flatMap((item) => (item.type === 'message' ? (item.content as Array<{text: string}>).map((part) => part.text) : [])).join('')
