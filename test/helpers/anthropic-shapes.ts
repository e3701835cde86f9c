/**
 * Checks our Anthropic responses against the official SDK's own types. Each shape below is typed as
 * `Fields<SdkType>`, so TypeScript itself insists that it lists every field of that type, marked required or
 * optional exactly as the SDK declares it; when the SDK adds or changes a field, this file stops compiling. At run
 * time a value must have every required field and no field the SDK does not know (no vendor extras).
 */
import type Anthropic from '@anthropic-ai/sdk'

type Fields<T> = {[K in keyof T]-?: {} extends Pick<T, K> ? 'optional' : 'required'}

const usage: Fields<Anthropic.Usage> = {
  cache_creation: 'required',
  cache_creation_input_tokens: 'required',
  cache_read_input_tokens: 'required',
  inference_geo: 'required',
  input_tokens: 'required',
  output_tokens: 'required',
  output_tokens_details: 'required',
  server_tool_use: 'required',
  service_tier: 'required',
  speed: 'required',
}
const message: Fields<Anthropic.Message> = {
  container: 'required',
  content: 'required',
  diagnostics: 'required',
  id: 'required',
  model: 'required',
  role: 'required',
  stop_details: 'required',
  stop_reason: 'required',
  stop_sequence: 'required',
  type: 'required',
  usage: 'required',
}
const textBlock: Fields<Anthropic.TextBlock> = {citations: 'required', text: 'required', type: 'required'}
const thinkingBlock: Fields<Anthropic.ThinkingBlock> = {signature: 'required', thinking: 'required', type: 'required'}
const toolUseBlock: Fields<Anthropic.ToolUseBlock> = {caller: 'required', id: 'required', input: 'required', name: 'required', toolset_name: 'optional', type: 'required'}
const messageDeltaUsage: Fields<Anthropic.MessageDeltaUsage> = {
  cache_creation_input_tokens: 'required',
  cache_read_input_tokens: 'required',
  input_tokens: 'required',
  output_tokens: 'required',
  output_tokens_details: 'required',
  server_tool_use: 'required',
}
const messageDelta: Fields<Anthropic.RawMessageDeltaEvent.Delta> = {container: 'required', stop_details: 'required', stop_reason: 'required', stop_sequence: 'required'}
const modelInfo: Fields<Anthropic.ModelInfo> = {
  capabilities: 'required',
  created_at: 'required',
  deprecated_at: 'required',
  display_name: 'required',
  id: 'required',
  lifecycle: 'required',
  line: 'required',
  max_input_tokens: 'required',
  max_tokens: 'required',
  retires_at: 'required',
  type: 'required',
}
const events = {
  content_block_delta: {delta: 'required', index: 'required', type: 'required'} satisfies Fields<Anthropic.RawContentBlockDeltaEvent>,
  content_block_start: {content_block: 'required', index: 'required', type: 'required'} satisfies Fields<Anthropic.RawContentBlockStartEvent>,
  content_block_stop: {index: 'required', type: 'required'} satisfies Fields<Anthropic.RawContentBlockStopEvent>,
  message_delta: {delta: 'required', type: 'required', usage: 'required'} satisfies Fields<Anthropic.RawMessageDeltaEvent>,
  message_start: {message: 'required', type: 'required'} satisfies Fields<Anthropic.RawMessageStartEvent>,
  message_stop: {type: 'required'} satisfies Fields<Anthropic.RawMessageStopEvent>,
}
const deltas = {
  input_json_delta: {partial_json: 'required', type: 'required'} satisfies Fields<Anthropic.InputJSONDelta>,
  signature_delta: {signature: 'required', type: 'required'} satisfies Fields<Anthropic.SignatureDelta>,
  text_delta: {text: 'required', type: 'required'} satisfies Fields<Anthropic.TextDelta>,
  thinking_delta: {thinking: 'required', type: 'required'} satisfies Fields<Anthropic.ThinkingDelta>,
}

function check(what: string, value: unknown, fields: Record<string, 'optional' | 'required'>) {
  if (typeof value !== 'object' || value === null) throw new Error(`${what} is not an object: ${JSON.stringify(value)}`)
  for (const [field, presence] of Object.entries(fields))
    if (presence === 'required' && !(field in value)) throw new Error(`${what} lacks the field ${field} the SDK requires: ${JSON.stringify(value)}`)
  for (const field of Object.keys(value))
    if (!(field in fields)) throw new Error(`${what} has the field ${field}, which the SDK's type does not have: ${JSON.stringify(value)}`)
}

function checkBlock(what: string, block: {type?: string}) {
  if (block.type === 'text') check(what, block, textBlock)
  else if (block.type === 'tool_use') check(what, block, toolUseBlock)
  else if (block.type === 'thinking') check(what, block, thinkingBlock)
  else throw new Error(`${what} has an unexpected type: ${JSON.stringify(block)}`)
}

export function assertAnthropicMessage(value: unknown): asserts value is Anthropic.Message {
  check('message', value, message)
  const {content, role, type, usage: used} = value as Anthropic.Message
  if (type !== 'message' || role !== 'assistant') throw new Error(`message has type ${type} and role ${role}`)
  check('message.usage', used, usage)
  for (const [index, block] of content.entries()) checkBlock(`message.content[${index}]`, block)
}

export function assertAnthropicModel(value: unknown): void {
  check('model', value, modelInfo)
}

/**
 * Checks each stream event's shape and the order Anthropic documents: message_start, then for each content block
 * content_block_start, content_block_delta*, content_block_stop (indices 0, 1, … in turn), then message_delta and
 * message_stop, each once.
 */
export function assertAnthropicStream(stream: Array<{type: string}>): void {
  const order = stream.map((event) => event.type)
  const [first, ...rest] = order
  if (first !== 'message_start' || order.at(-1) !== 'message_stop' || order.at(-2) !== 'message_delta')
    throw new Error(`events are not message_start … message_delta, message_stop: ${order.join(', ')}`)
  let open: number | undefined
  let next = 0
  for (const [position, event] of stream.entries()) {
    const fields = events[event.type as keyof typeof events]
    if (!fields) throw new Error(`unknown event ${event.type}`)
    check(event.type, event, fields)
    if (event.type === 'message_start') {
      if (position !== 0) throw new Error('message_start appears twice')
      assertAnthropicMessage((event as Anthropic.RawMessageStartEvent).message)
    } else if (event.type === 'content_block_start') {
      const {content_block: block, index} = event as Anthropic.RawContentBlockStartEvent
      if (open !== undefined || index !== next) throw new Error(`content_block_start ${index} while block ${open} is open or ${next} is due: ${order.join(', ')}`)
      checkBlock('content_block', block)
      open = index
    } else if (event.type === 'content_block_delta') {
      const {delta, index} = event as Anthropic.RawContentBlockDeltaEvent
      if (index !== open) throw new Error(`content_block_delta for block ${index} while ${open} is open`)
      check(delta.type, delta, deltas[delta.type as keyof typeof deltas] ?? {})
    } else if (event.type === 'content_block_stop') {
      if ((event as Anthropic.RawContentBlockStopEvent).index !== open) throw new Error('content_block_stop does not close the open block')
      open = undefined
      next++
    } else if (event.type === 'message_delta') {
      if (open !== undefined || position !== stream.length - 2) throw new Error(`message_delta while a block is open or before the end: ${order.join(', ')}`)
      const {delta, usage: used} = event as Anthropic.RawMessageDeltaEvent
      check('message_delta.delta', delta, messageDelta)
      check('message_delta.usage', used, messageDeltaUsage)
    }
  }

  if (rest.filter((type) => type === 'message_delta').length !== 1) throw new Error('message_delta must come exactly once')
}
