/**
 * What a Responses API request says, as the chat path takes it: the request schema, its input items stored in the
 * shape `GET /v1/responses/{id}/input_items` answers (each with an id), and those items as chat turns, the way
 * anthropic.ts turns Anthropic's blocks into turns.
 */
import type {ChatTurn, Infer, KernelApi, Schema} from 'service-toolkit'

import {jsonTextWithin} from './openai-shapes.js'
import {itemId} from './responses-run.js'

/** OpenAI's rule for function names. */
const FUNCTION_NAME = /^[\w-]{1,64}$/
const ID = {maxLength: 128, minLength: 1}
/** Input items of one request, and of a stored conversation it continues: a long chat fits well within. */
export const MAX_ITEMS = 2048

/** A string, or what `list` takes: a bad list item is named by its own field rather than as a failed alternative. */
function stringOr<T>(s: KernelApi['schema'], list: Schema<T[]>, expected: string): Schema<string | T[]> {
  const text = s.string()
  return {
    json: {anyOf: [text.json, list.json], description: expected},
    optional: false,
    parse: (value, path = '') => (typeof value === 'string' ? text.parse(value, path) : list.parse(value, path)),
  }
}

export function requestSchema(api: KernelApi) {
  const s = api.schema
  const part = s.object({text: s.optional(s.string()), type: s.string()}, {unknownKeys: 'strip'})
  const parts = s.array(part, {maxItems: 256})
  const content = stringOr(s, parts, 'text, or a list of {"type": "input_text", "text": …} parts')
  const item = s.object(
    {
      arguments: s.optional(s.refine(s.string(), jsonTextWithin(s))),
      call_id: s.optional(s.string(ID)),
      content: s.optional(content),
      id: s.optional(s.nullable(s.string(ID))),
      name: s.optional(s.string()),
      output: s.optional(content),
      role: s.optional(s.string({enum: ['user', 'system', 'developer', 'assistant']})),
      status: s.optional(s.nullable(s.string())),
      type: s.optional(s.string({enum: ['message', 'function_call', 'function_call_output', 'reasoning', 'item_reference']})),
    },
    {title: 'ResponseInputItem', unknownKeys: 'strip'},
  )
  const tool = s.object({
    description: s.optional(s.nullable(s.string())),
    name: s.string({pattern: FUNCTION_NAME}),
    parameters: s.optional(s.nullable(s.jsonSchema({description: 'JSON Schema of the arguments.'}))),
    strict: s.optional(s.nullable(s.boolean())),
    type: s.literal('function'),
  })
  const format = s.object({
    description: s.optional(s.string()),
    name: s.optional(s.string({pattern: FUNCTION_NAME})),
    schema: s.optional(s.jsonSchema()),
    strict: s.optional(s.nullable(s.boolean())),
    type: s.string({enum: ['text', 'json_object', 'json_schema']}),
  })
  const effort = s.string({description: '"none" answers without thinking; the others leave it to the model.', enum: ['none', 'minimal', 'low', 'medium', 'high', 'xhigh']})
  const summary = s.string({enum: ['auto', 'concise', 'detailed']})
  const metadata = s.refine(s.record(s.string({maxLength: 512}), {description: 'Up to 16 pairs; keys up to 64 characters.'}), (value, path) => {
    const keys = Object.keys(value)
    if (keys.length > 16) throw api.errors.badRequest(`\`${path}\` has ${keys.length} pairs; at most 16 are kept.`, path)
    const long = keys.find((key) => key.length > 64)
    if (long !== undefined) throw api.errors.badRequest(`\`${path}\` keys are at most 64 characters; "${long.slice(0, 40)}…" is longer.`, path)
    return value
  })
  return s.object(
    {
      background: s.optional(s.nullable(s.boolean({description: 'Answer at once with the response in progress; GET it later, or cancel it.'}))),
      include: s.optional(s.nullable(s.array(s.string({maxLength: 128}), {maxItems: 16}))),
      input: s.optional(stringOr(s, s.array(item, {maxItems: MAX_ITEMS}), 'text, or a list of input items')),
      instructions: s.optional(s.nullable(s.string({description: 'A system message first in the conversation; not carried over by previous_response_id.'}))),
      max_output_tokens: s.optional(s.nullable(s.integer({maximum: s.INT32_MAX, minimum: 1}))),
      max_tool_calls: s.optional(s.nullable(s.integer({description: 'Accepted: it bounds built-in tools, which this service has none of.', minimum: 1}))),
      metadata: s.optional(s.nullable(metadata)),
      model: s.string({description: 'Uid of a running model.', minLength: 1}),
      parallel_tool_calls: s.optional(s.nullable(s.boolean())),
      previous_response_id: s.optional(s.nullable(s.string({...ID, description: 'A stored response whose conversation this request continues.'}))),
      prompt_cache_key: s.optional(s.nullable(s.string({maxLength: 256}))),
      reasoning: s.optional(s.nullable(s.object({effort: s.optional(s.nullable(effort)), generate_summary: s.optional(s.nullable(summary)), summary: s.optional(s.nullable(summary))}))),
      safety_identifier: s.optional(s.nullable(s.string({maxLength: 64}))),
      service_tier: s.optional(s.nullable(s.string({maxLength: 32}))),
      store: s.optional(s.nullable(s.boolean({description: 'Keep the response for GET and previous_response_id (the default).'}))),
      stream: s.optional(s.nullable(s.boolean())),
      stream_options: s.optional(s.nullable(s.object({include_obfuscation: s.optional(s.nullable(s.boolean()))}))),
      temperature: s.optional(s.nullable(s.number({maximum: 2, minimum: 0}))),
      text: s.optional(s.nullable(s.object({format: s.optional(format), verbosity: s.optional(s.nullable(s.string({enum: ['low', 'medium', 'high']})))}))),
      tool_choice: s.optional(
        s.nullable(
          s.union(
            [s.string({enum: ['none', 'auto', 'required']}), s.object({name: s.string(), type: s.literal('function')})],
            '"none", "auto", "required" or {"type": "function", "name": …}',
          ),
        ),
      ),
      tools: s.optional(s.nullable(s.array(tool, {maxItems: 128}))),
      top_logprobs: s.optional(s.nullable(s.integer({description: 'Only 0: the engines return no log probabilities.', maximum: 0, minimum: 0}))),
      top_p: s.optional(s.nullable(s.number({maximum: 1, minimum: 0}))),
      truncation: s.optional(s.nullable(s.string({description: 'Only "disabled": a conversation past the context is refused.', enum: ['disabled']}))),
      user: s.optional(s.nullable(s.string({maxLength: 256}))),
    },
    {title: 'CreateResponse'},
  )
}

export type ResponsesRequest = Infer<ReturnType<typeof requestSchema>>
type InputItem = Exclude<NonNullable<ResponsesRequest['input']>, string>[number]
/** An input item as stored and listed: a message, a function call or a function call's output. */
export type StoredItem = Record<string, unknown> & {id: string; type: string}

/** Text parts are separate pieces of text, so they are joined with a line break, as vLLM joins them. */
const textOf = (content: string | Array<{text?: string}>) => (typeof content === 'string' ? content : content.map((part) => part.text ?? '').join('\n'))

const TEXT_PARTS = new Set(['input_text', 'output_text', 'text'])

/** The request's input as stored items, each checked for what its type needs; reasoning items are left out, as chat templates leave past reasoning out. */
export function inputItems(api: KernelApi, input: ResponsesRequest['input']): StoredItem[] {
  if (input === undefined) return []
  if (typeof input === 'string') return [{content: [{text: input, type: 'input_text'}], id: itemId('msg'), role: 'user', status: 'completed', type: 'message'}]
  return input.flatMap((item, index): StoredItem[] => {
    const at = `input[${index}]`
    const type = item.type ?? 'message'
    const require = <K extends 'arguments' | 'call_id' | 'content' | 'name' | 'output' | 'role'>(field: K): NonNullable<InputItem[K]> => {
      const value = item[field]
      if (value === undefined || value === null) throw api.errors.badRequest(`\`${at}.${field}\` is required in a ${type} item.`, `${at}.${field}`)
      return value as NonNullable<InputItem[K]>
    }

    const id = item.id ?? itemId(type === 'message' ? 'msg' : type === 'function_call' ? 'fc' : 'fco')
    if (type === 'reasoning') return []
    if (type === 'item_reference')
      throw api.errors.badRequest(`\`${at}\`: item_reference items are not supported; send the item itself, or continue a stored response with previous_response_id.`, `${at}.type`)
    if (type === 'function_call') return [{arguments: require('arguments'), call_id: require('call_id'), id, name: require('name'), status: 'completed', type}]
    if (type === 'function_call_output') return [{call_id: require('call_id'), id, output: textOf(checkedParts(api, require('output'), `${at}.output`)), status: 'completed', type}]
    const role = require('role')
    const text = textOf(checkedParts(api, require('content'), `${at}.content`))
    const content = role === 'assistant' ? [{annotations: [], logprobs: [], text, type: 'output_text'}] : [{text, type: 'input_text'}]
    return [{content, id, role, status: 'completed', type: 'message'}]
  })
}

function checkedParts<T extends string | Array<{text?: string; type: string}>>(api: KernelApi, content: T, at: string): T {
  if (typeof content === 'string') return content
  for (const [index, part] of content.entries()) {
    if (!TEXT_PARTS.has(part.type))
      throw api.errors.badRequest(`\`${at}[${index}].type\`: ${part.type} parts are not supported; this service reads input_text parts.`, `${at}[${index}].type`)
    if (part.text === undefined) throw api.errors.badRequest(`\`${at}[${index}].text\` is required in an ${part.type} part.`, `${at}[${index}].text`)
  }

  return content
}

/**
 * Stored items (a continued conversation's, then the request's) as chat turns: instructions first, a developer's
 * message as a system turn, function calls joined to the assistant turn they follow, and their outputs as tool
 * turns, each answering an earlier call. Items of `fromRequest` onwards are the request's, named in errors by index.
 */
export function toTurns(api: KernelApi, items: StoredItem[], instructions: string | null | undefined, fromRequest: number): ChatTurn[] {
  const turns: ChatTurn[] = instructions ? [{content: instructions, role: 'system'}] : []
  const called = new Set<string>()
  for (const [index, item] of items.entries()) {
    if (item.type === 'function_call') {
      const call = {arguments: item.arguments as string, id: item.call_id as string, name: item.name as string}
      called.add(call.id)
      const last = turns.at(-1)
      if (last?.role === 'assistant') last.toolCalls = [...(last.toolCalls ?? []), call]
      else turns.push({content: '', role: 'assistant', toolCalls: [call]})
    } else if (item.type === 'function_call_output') {
      const callId = item.call_id as string
      if (!called.has(callId)) {
        const at = index >= fromRequest ? `input[${index - fromRequest}].call_id` : 'previous_response_id'
        throw api.errors.badRequest(`\`${at}\` "${callId}" matches no function_call item before it.`, at)
      }

      turns.push({content: item.output as string, role: 'tool', toolCallId: callId})
    } else if (item.type === 'message') {
      const text = (item.content as Array<{text: string}>).map((part) => part.text).join('\n')
      const role = item.role === 'developer' ? 'system' : (item.role as ChatTurn['role'])
      turns.push({content: text, role})
    }
  }

  return turns
}
