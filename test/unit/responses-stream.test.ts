/**
 * The bytes of a Responses stream: each event as `event: <type>` and its JSON, fields in OpenAI's order and the
 * sequence number last, written from the engine's events by runResponse and the service's SSE writer. Pinned byte
 * for byte as the stream was before its events were built for speed (one literal an event, numbered as built), so a
 * change to how they are made cannot change what a client reads.
 */
import {expect} from 'chai'

import type {GenerationEvent} from '../../src/kernel/generation.js'

import {type ResponseObject, runResponse} from '../../plugins/model-llm/src/responses-run.js'
import {ServiceError} from '../../src/kernel/errors.js'
import {toServerSentEvents} from '../../src/server/sse.js'

const BEFORE_TOOL_CALL = [
  'event: response.created\ndata: {"response":{"id":"resp_1","output":[],"status":"in_progress"},"type":"response.created","sequence_number":0}',
  'event: response.in_progress\ndata: {"response":{"id":"resp_1","output":[],"status":"in_progress"},"type":"response.in_progress","sequence_number":1}',
  'event: response.output_item.added\ndata: {"item":{"id":"rs_1","summary":[],"type":"reasoning"},"output_index":0,"type":"response.output_item.added","sequence_number":2}',
  'event: response.reasoning_summary_part.added\ndata: {"item_id":"rs_1","output_index":0,"part":{"text":"","type":"summary_text"},"summary_index":0,"type":"response.reasoning_summary_part.added","sequence_number":3}',
  'event: response.reasoning_summary_text.delta\ndata: {"delta":"Hm \\"so\\"","item_id":"rs_1","output_index":0,"summary_index":0,"type":"response.reasoning_summary_text.delta","sequence_number":4}',
  'event: response.reasoning_summary_text.done\ndata: {"item_id":"rs_1","output_index":0,"summary_index":0,"text":"Hm \\"so\\"","type":"response.reasoning_summary_text.done","sequence_number":5}',
  'event: response.reasoning_summary_part.done\ndata: {"item_id":"rs_1","output_index":0,"part":{"text":"Hm \\"so\\"","type":"summary_text"},"summary_index":0,"type":"response.reasoning_summary_part.done","sequence_number":6}',
  'event: response.output_item.done\ndata: {"item":{"id":"rs_1","summary":[{"text":"Hm \\"so\\"","type":"summary_text"}],"type":"reasoning","status":"completed"},"output_index":0,"type":"response.output_item.done","sequence_number":7}',
  'event: response.output_item.added\ndata: {"item":{"content":[],"id":"msg_2","role":"assistant","status":"in_progress","type":"message"},"output_index":1,"type":"response.output_item.added","sequence_number":8}',
  'event: response.content_part.added\ndata: {"item_id":"msg_2","output_index":1,"content_index":0,"part":{"annotations":[],"logprobs":[],"text":"","type":"output_text"},"type":"response.content_part.added","sequence_number":9}',
  'event: response.output_text.delta\ndata: {"content_index":0,"delta":"Hi","item_id":"msg_2","logprobs":[],"output_index":1,"type":"response.output_text.delta","sequence_number":10}',
  'event: response.output_text.delta\ndata: {"content_index":0,"delta":" there","item_id":"msg_2","logprobs":[],"output_index":1,"type":"response.output_text.delta","sequence_number":11}',
]
const COMPLETED_WITH_TOOL_CALL = [
  'event: response.output_text.done\ndata: {"item_id":"msg_2","output_index":1,"content_index":0,"logprobs":[],"text":"Hi there","type":"response.output_text.done","sequence_number":12}',
  'event: response.content_part.done\ndata: {"item_id":"msg_2","output_index":1,"content_index":0,"part":{"annotations":[],"logprobs":[],"text":"Hi there","type":"output_text"},"type":"response.content_part.done","sequence_number":13}',
  'event: response.output_item.done\ndata: {"item":{"content":[{"annotations":[],"logprobs":[],"text":"Hi there","type":"output_text"}],"id":"msg_2","role":"assistant","status":"completed","type":"message"},"output_index":1,"type":"response.output_item.done","sequence_number":14}',
  'event: response.output_item.added\ndata: {"item":{"arguments":"","call_id":"call_3","id":"fc_4","name":"get_weather","status":"in_progress","type":"function_call"},"output_index":2,"type":"response.output_item.added","sequence_number":15}',
  'event: response.function_call_arguments.delta\ndata: {"delta":"{\\"city\\": \\"Paris\\"}","item_id":"fc_4","output_index":2,"type":"response.function_call_arguments.delta","sequence_number":16}',
  'event: response.function_call_arguments.done\ndata: {"item_id":"fc_4","output_index":2,"arguments":"{\\"city\\": \\"Paris\\"}","name":"get_weather","type":"response.function_call_arguments.done","sequence_number":17}',
  'event: response.output_item.done\ndata: {"item":{"arguments":"{\\"city\\": \\"Paris\\"}","call_id":"call_3","id":"fc_4","name":"get_weather","status":"completed","type":"function_call"},"output_index":2,"type":"response.output_item.done","sequence_number":18}',
  'event: response.completed\ndata: {"response":{"id":"resp_1","output":[{"id":"rs_1","summary":[{"text":"Hm \\"so\\"","type":"summary_text"}],"type":"reasoning","status":"completed"},{"content":[{"annotations":[],"logprobs":[],"text":"Hi there","type":"output_text"}],"id":"msg_2","role":"assistant","status":"completed","type":"message"},{"arguments":"{\\"city\\": \\"Paris\\"}","call_id":"call_3","id":"fc_4","name":"get_weather","status":"completed","type":"function_call"}],"status":"completed","usage":{"input_tokens":5,"input_tokens_details":{"cache_write_tokens":0,"cached_tokens":2},"output_tokens":6,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":11},"completed_at":0},"type":"response.completed","sequence_number":19}',
]
const FAILED = 'event: error\ndata: {"code":"model_crashed","message":"the model crashed","param":null,"sequence_number":12,"type":"error"}'

/** Reasoning, two pieces of text, then (unless it fails there) a function call, as a reasoning model's engine sends them. */
async function* engine(failing: boolean): AsyncGenerator<GenerationEvent> {
  yield {promptTokens: 5, type: 'start'}
  yield {text: 'Hm "so"', type: 'reasoning'}
  yield {text: 'Hi', type: 'text'}
  yield {text: ' there', type: 'text'}
  if (failing) throw new ServiceError(503, 'model_crashed', 'the model crashed')
  yield {index: 0, name: 'get_weather', type: 'tool_call'}
  yield {index: 0, text: '{"city": "Paris"}', type: 'tool_arguments'}
  yield {cachedTokens: 2, completionTokens: 6, finishReason: 'tool_calls', promptTokens: 5, type: 'done'}
}

/** The stream's events as written, with the random item ids numbered in order of appearance and the clock at 0. */
async function streamed(failing: boolean): Promise<string[]> {
  const response: ResponseObject = {id: 'resp_1', output: [], status: 'in_progress'}
  const run = runResponse(response, engine(failing))
  let text = ''
  for await (const chunk of toServerSentEvents(run.events, {errorEvent: run.errorEvent})) text += String(chunk)
  const ids = new Map<string, string>()
  const numbered = text.replaceAll(/\b(rs|msg|fc|call)_[\da-f]{24}\b/g, (id, prefix: string) => ids.get(id) ?? ids.set(id, `${prefix}_${ids.size + 1}`).get(id)!)
  return numbered.replaceAll(/"completed_at":\d+/g, '"completed_at":0').split('\n\n').filter(Boolean)
}

describe('Responses stream bytes', () => {
  it('writes every event of a reasoning, text and function-call answer as it always has', async () => {
    expect(await streamed(false)).to.deep.equal([...BEFORE_TOOL_CALL, ...COMPLETED_WITH_TOOL_CALL])
  })

  it('ends a failed stream with an error event numbered after the events sent', async () => {
    expect(await streamed(true)).to.deep.equal([...BEFORE_TOOL_CALL, FAILED])
  })

  it('saves the response once its last event is out, before the stream ends, and not when the engine fails', async () => {
    const seen: string[] = []
    const run = runResponse({id: 'resp_1', output: [], status: 'in_progress'}, engine(false), async () => void seen.push('saved'))
    for await (const event of run.events) seen.push(event.event)
    expect(seen.slice(-2)).to.deep.equal(['response.completed', 'saved'])

    let saved = false
    const failed = runResponse({id: 'resp_2', output: [], status: 'in_progress'}, engine(true), async () => void (saved = true))
    const error = await (async () => {
      for await (const _ of failed.events);
    })().catch((error: unknown) => error)
    expect(error).to.be.instanceOf(ServiceError)
    expect(saved).to.equal(false)
  })
})
