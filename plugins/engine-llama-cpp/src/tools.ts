/**
 * Tool calling on node-llama-cpp. Two mechanisms, chosen by the request's tool choice:
 *
 * - `auto`: node-llama-cpp's own function calling. The chat wrapper documents the tools in the model's native
 *   syntax and the model decides whether to call one; arguments stream through `onFunctionCallParamsChunk`.
 * - `required` or a named tool: the model must call, whether or not it would on its own (a small or random-weight
 *   model never does). The tools are described in a system message and a grammar forces the answer to be
 *   `{"name": <tool>, "arguments": <its arguments>}`, so the call is certain and its arguments match the tool's schema.
 *
 * Calls and results of earlier turns become node-llama-cpp function-call items of the model's response, which the
 * chat wrapper renders in the model's own syntax.
 */
import type {ChatHistoryItem, ChatModelFunctionCall, ChatModelResponse, GbnfJsonSchema} from 'node-llama-cpp'
import type {ChatTurn, GenerationEvent, ToolDefinition} from 'service-toolkit'

import {requestError} from './errors.js'
import {toGrammarSchema} from './json-schema.js'

const NO_ARGUMENTS = {properties: {}, type: 'object'}

const parameterSchema = (tool: ToolDefinition, index: number): GbnfJsonSchema =>
  tool.parameters ? toGrammarSchema(tool.parameters, tool.param ?? `tools[${index}].parameters`) : (NO_ARGUMENTS as GbnfJsonSchema)

/** The functions node-llama-cpp offers the model in `auto` mode. */
export function toFunctions(tools: ToolDefinition[]) {
  return Object.fromEntries(tools.map((tool, index) => [tool.name, {description: tool.description, params: parameterSchema(tool, index)}]))
}

/**
 * The grammar's schema of a forced call: one object naming one of the tools, with arguments that fit it. The name
 * comes first (the grammar keeps key order) so that a stream can announce the call before its arguments.
 */
export function forcedCallSchema(tools: ToolDefinition[], indexOf: (tool: ToolDefinition) => number): GbnfJsonSchema {
  const alternatives = tools.map((tool) => ({
    properties: {name: {const: tool.name}, arguments: parameterSchema(tool, indexOf(tool))},
    type: 'object',
  }))
  return (alternatives.length === 1 ? alternatives[0] : {oneOf: alternatives}) as GbnfJsonSchema
}

export function forcedCallInstructions(tools: ToolDefinition[]): string {
  const lines = tools.map((tool) => {
    const schema = JSON.stringify(tool.parameters ?? NO_ARGUMENTS)
    return `- ${tool.name}${tool.description ? `: ${tool.description}` : ''}\n  arguments (JSON Schema): ${schema}`
  })
  const which = tools.length === 1 ? `the tool ${tools[0].name}` : 'one of these tools'
  return `Call ${which} now. Answer with only a JSON object {"name": <tool name>, "arguments": <its arguments>}.\nTools:\n${lines.join('\n')}`
}

function parseArguments(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}

/**
 * The conversation as node-llama-cpp history. An assistant turn's tool calls become function-call items of its
 * response, and each tool turn fills in the result of the call it answers. When the conversation ends with tool
 * results, the model continues that same response (as it would after calling a function itself), and with
 * `continueFinal` a final assistant turn is continued too (a prefill); otherwise a new, empty response is opened.
 * node-llama-cpp leaves the history's last response open, without the template's end-of-turn text.
 */
export function toHistory(messages: ChatTurn[], instructions?: string, continueFinal = false): ChatHistoryItem[] {
  const history: ChatHistoryItem[] = []
  const calls = new Map<string, ChatModelFunctionCall>()
  for (const [index, message] of messages.entries()) {
    if (message.role === 'system') history.push({text: message.content, type: 'system'})
    else if (message.role === 'user') history.push({text: message.content, type: 'user'})
    else if (message.role === 'assistant') {
      const response: ChatModelResponse['response'] = message.content ? [message.content] : []
      for (const call of message.toolCalls ?? []) {
        const item: ChatModelFunctionCall = {name: call.name, params: parseArguments(call.arguments), result: undefined, type: 'functionCall'}
        calls.set(call.id, item)
        response.push(item)
      }

      history.push({response, type: 'model'})
    } else {
      const call = message.toolCallId === undefined ? undefined : calls.get(message.toolCallId)
      if (!call) throw requestError(`messages[${index}] is a tool result for a call no earlier assistant turn made (tool_call_id ${JSON.stringify(message.toolCallId)}).`, `messages[${index}]`)
      call.result = parseArguments(message.content)
    }
  }

  if (instructions) {
    const first = history[0]
    if (first?.type === 'system') history[0] = {text: `${first.text}\n\n${instructions}`, type: 'system'}
    else history.unshift({text: instructions, type: 'system'})
  }

  if (messages.at(-1)?.role !== 'tool' && !continuesFinalMessage(messages, continueFinal)) history.push({response: [], type: 'model'})
  return history
}

/** Whether the answer continues the final message: an assistant turn without tool calls, when `continueFinal` asks for it. */
export function continuesFinalMessage(messages: ChatTurn[], continueFinal = false): boolean {
  const last = messages.at(-1)
  return continueFinal && last?.role === 'assistant' && !last.toolCalls?.length
}

/**
 * Splits the text of a forced call, `{"name": "…", "arguments": …}`, into a `tool_call` event as soon as the name is
 * complete and `tool_arguments` events for the arguments as they are generated. The wrapper object's closing brace
 * is held back until the end, since until then it cannot be told from a brace of the arguments.
 */
export class ForcedCallParser {
  private buffer = ''
  private started = false

  constructor(private readonly emit: (event: GenerationEvent) => void) {}

  push(text: string): void {
    this.buffer += text
    if (!this.started) {
      const head = /^\s*\{\s*"name"\s*:\s*("(?:[^"\\]|\\.)*")\s*,\s*"arguments"\s*:\s*/.exec(this.buffer)
      if (!head) return
      this.started = true
      this.emit({index: 0, name: JSON.parse(head[1]) as string, type: 'tool_call'})
      this.buffer = this.buffer.slice(head[0].length)
    }

    const held = /\s*\}?\s*$/.exec(this.buffer)!.index
    if (held > 0) {
      this.emit({index: 0, text: this.buffer.slice(0, held), type: 'tool_arguments'})
      this.buffer = this.buffer.slice(held)
    }
  }

  /** `complete`: the grammar finished the object, so the held-back brace is the wrapper's. */
  finish(complete: boolean): boolean {
    if (!this.started) return false
    const rest = complete ? this.buffer.replace(/\s*\}\s*$/, '') : this.buffer
    if (rest) this.emit({index: 0, text: rest, type: 'tool_arguments'})
    return true
  }
}
