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
export type StreamEvent = Record<string, unknown> & {type: string}

export const now = () => Math.floor(Date.now() / 1000)

/** OpenAI's usage; the engines do not count reasoning apart from the answer, nor write to a cache a request can see. */
export const usageOf = (event: Extract<GenerationEvent, {type: 'done'}>) => ({
  input_tokens: event.promptTokens,
  input_tokens_details: {cache_write_tokens: 0, cached_tokens: event.cachedTokens ?? 0},
  output_tokens: event.completionTokens,
  output_tokens_details: {reasoning_tokens: 0},
  total_tokens: event.promptTokens + event.completionTokens,
})

/**
 * Runs `events` into `response` (its `output`, `status`, `usage`), yielding the stream's events without their
 * sequence numbers. The response is `in_progress` on entry and completed, incomplete (max_output_tokens) or, when
 * the engine stopped on an abort, cancelled when this ends. An event carries the live response and items, not
 * copies: a stream serializes each event before it asks for the next (sse.ts), and the other callers drop them, so
 * copying the whole Response three times a request was work no byte depended on.
 */
export async function* generate(response: ResponseObject, events: AsyncIterable<GenerationEvent>): AsyncGenerator<StreamEvent> {
  yield {response, type: 'response.created'}
  yield {response, type: 'response.in_progress'}
  let open: Item | undefined
  let text = ''
  const outputIndex = () => response.output.length - 1

  function* close(): Generator<StreamEvent> {
    if (!open) return
    const item = open
    open = undefined
    const at = {item_id: item.id, output_index: outputIndex()}
    if (item.type === 'reasoning') {
      const part = {text, type: 'summary_text'}
      item.summary = [part]
      yield {...at, summary_index: 0, text, type: 'response.reasoning_summary_text.done'}
      yield {...at, part, summary_index: 0, type: 'response.reasoning_summary_part.done'}
    } else if (item.type === 'message') {
      const part = {annotations: [], logprobs: [], text, type: 'output_text'}
      item.content = [part]
      yield {...at, content_index: 0, logprobs: [], text, type: 'response.output_text.done'}
      yield {...at, content_index: 0, part, type: 'response.content_part.done'}
    } else {
      item.arguments = text
      yield {...at, arguments: text, name: item.name, type: 'response.function_call_arguments.done'}
    }

    item.status = 'completed'
    yield {item, output_index: outputIndex(), type: 'response.output_item.done'}
  }

  function* start(item: Item): Generator<StreamEvent> {
    yield* close()
    response.output.push(item)
    open = item
    text = ''
    yield {item, output_index: outputIndex(), type: 'response.output_item.added'}
    const at = {item_id: item.id, output_index: outputIndex()}
    if (item.type === 'reasoning') yield {...at, part: {text: '', type: 'summary_text'}, summary_index: 0, type: 'response.reasoning_summary_part.added'}
    if (item.type === 'message') yield {...at, content_index: 0, part: {annotations: [], logprobs: [], text: '', type: 'output_text'}, type: 'response.content_part.added'}
  }

  for await (const event of events) {
    if (event.type === 'reasoning') {
      if (open?.type !== 'reasoning') yield* start({id: itemId('rs'), summary: [], type: 'reasoning'})
      text += event.text
      yield {delta: event.text, item_id: open!.id, output_index: outputIndex(), summary_index: 0, type: 'response.reasoning_summary_text.delta'}
    } else if (event.type === 'text') {
      if (open?.type !== 'message') yield* start({content: [], id: itemId('msg'), role: 'assistant', status: 'in_progress', type: 'message'})
      text += event.text
      yield {content_index: 0, delta: event.text, item_id: open!.id, logprobs: [], output_index: outputIndex(), type: 'response.output_text.delta'}
    } else if (event.type === 'tool_call') {
      yield* start({arguments: '', call_id: itemId('call'), id: itemId('fc'), name: event.name, status: 'in_progress', type: 'function_call'})
    } else if (event.type === 'tool_arguments') {
      text += event.text
      yield {delta: event.text, item_id: open!.id, output_index: outputIndex(), type: 'response.function_call_arguments.delta'}
    } else if (event.type === 'done') {
      yield* close()
      response.usage = usageOf(event)
      // An abort is a cancelled background response, which no stream follows.
      if (event.finishReason === 'abort') response.status = 'cancelled'
      else if (event.finishReason === 'length') {
        response.status = 'incomplete'
        response.incomplete_details = {reason: 'max_output_tokens'}
        yield {response, type: 'response.incomplete'}
      } else {
        response.status = 'completed'
        response.completed_at = now()
        yield {response, type: 'response.completed'}
      }
    }
  }
}

/** The text of the response's messages, as the SDKs' `output_text`. */
export const outputText = (response: ResponseObject) =>
  response.output.flatMap((item) => (item.type === 'message' ? (item.content as Array<{text: string}>).map((part) => part.text) : [])).join('')
