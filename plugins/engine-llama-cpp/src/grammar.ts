/**
 * The grammars that constrain `response_format` and forced tool calls. node-llama-cpp writes the GBNF for a JSON
 * Schema (json-schema.ts says which schemas); three of its choices are changed here, as llama.cpp's own
 * json-schema-to-grammar and server make them, so that even a model with random weights can only write JSON that
 * parses to what the schema says:
 *
 * - Integers are plain digits, at most 16 of them. node-llama-cpp allows an exponent of up to 16 digits, so an
 *   integer could come out as `6E994`, which JSON.parse reads as Infinity.
 * - A number's exponent has at most two digits (its fraction at most 16, as before), so every number is finite.
 * - The grammar ends where the JSON value ends, so the model's end-of-generation token is the only way out once the
 *   value is complete. node-llama-cpp instead makes the model write four newlines after the value and stops on them
 *   as a text trigger, which costs tokens (a reply whose value was complete could still run out of `max_tokens`).
 *
 * Whitespace between tokens is already bounded (one space, or a newline with the indentation of its depth).
 */
import type {GbnfJsonSchema, Llama, LlamaGrammar} from 'node-llama-cpp'
import type {ChatPayload, ToolDefinition} from 'service-toolkit'

import {requestError} from './errors.js'
import {toGrammarSchema} from './json-schema.js'
import {forcedCallSchema} from './tools.js'

/** `json_object`: any JSON object. */
const ANY_OBJECT = {additionalProperties: true, type: 'object'} as GbnfJsonSchema

const INTEGRAL = '"-"? ("0" | [1-9] [0-9]{0,15})'
const RULES: Array<[name: string, definition: string]> = [
  ['integer-number-rule', INTEGRAL],
  ['fractional-number-rule', `${INTEGRAL} ("." [0-9]{1,16})? ([eE] [-+]? [0-9]{1,2})?`],
]
/** What node-llama-cpp appends to the root rule: four newlines, then any number of them. */
const ENDING = ' "\\n\\n\\n\\n" [\\n]*'

/** node-llama-cpp's GBNF for the schema, bounded as the module comment says. */
export function boundJsonGrammar(gbnf: string): string {
  const lines = gbnf.split('\n')
  const root = lines.findIndex((line) => line.startsWith('root ::= '))
  // A node-llama-cpp that writes its grammars differently must not go unnoticed: the bounds would silently be lost.
  if (root < 0 || !lines[root].endsWith(ENDING)) throw new Error(`node-llama-cpp's JSON grammar no longer ends its root rule with${ENDING}`)
  lines[root] = lines[root].slice(0, -ENDING.length)
  for (const [index, line] of lines.entries())
    for (const [name, definition] of RULES) if (line.startsWith(`${name} ::= `)) lines[index] = `${name} ::= ${definition}`
  return lines.join('\n')
}

/**
 * A grammar that only lets the model write JSON matching `schema` (already checked by json-schema.ts), the schema
 * given at `param`. What llama.cpp cannot compile is the request's fault, a 400: its grammar parser refuses a rule
 * repeated more than about 2,000 times (minItems, maxItems, minLength, maxLength, counted together when nested), and
 * node-llama-cpp a schema nested past its own limit. Its message says only "Failed to parse grammar", so the likely
 * causes are named instead.
 */
export async function jsonGrammar(llama: Llama, schema: GbnfJsonSchema, param: string): Promise<LlamaGrammar> {
  let gbnf: string
  try {
    // node-llama-cpp compiles the grammar it writes here already, so llama.cpp's refusals come from this call too.
    gbnf = (await llama.createGrammarForJsonSchema<GbnfJsonSchema>(schema)).grammar
  } catch (error) {
    const why = /nesting/i.test((error as Error).message)
      ? 'it nests deeper than node-llama-cpp follows. Nest it less deeply.'
      : 'llama.cpp refuses a grammar that repeats a value more than about 2,000 times (minItems, maxItems, minLength, maxLength; nested ones multiply). Lower those bounds.'
    throw requestError(`\`${param}\` cannot be turned into a grammar by the llama.cpp engine: ${why}`, param)
  }

  return llama.createGrammar({grammar: boundJsonGrammar(gbnf)})
}

/** A count large enough that llama.cpp's grammar compiler may refuse it (see jsonGrammar). */
const LARGE_COUNT = /"(?:min|max)(?:Items|Length)":\d{3,}/

/**
 * Compiles the grammar of each tool whose schema has a large count, so that one llama.cpp refuses is a 400 naming that
 * tool's parameters. In `auto` mode node-llama-cpp would compile it only when the model calls the tool, mid-reply.
 */
async function checkToolGrammars(llama: Llama, tools: ToolDefinition[]): Promise<void> {
  for (const [index, tool] of tools.entries()) {
    if (!tool.parameters || !LARGE_COUNT.test(JSON.stringify(tool.parameters))) continue
    const param = tool.param ?? `tools[${index}].parameters`
    await jsonGrammar(llama, toGrammarSchema(tool.parameters, param), param)
  }
}

/** The grammar a chat reply is held to, if any: a forced call to one of `plan.tools`, or the response format. */
export async function chatGrammar(llama: Llama, request: ChatPayload, plan: {mode: 'none' | 'auto' | 'forced'; tools: ToolDefinition[]}): Promise<LlamaGrammar | undefined> {
  const format = request.responseFormat ?? {type: 'text'}
  if (format.type !== 'text' && plan.mode !== 'none')
    throw requestError('response_format cannot be combined with tools on the llama.cpp engine; send tool_choice "none", or leave out response_format.', 'response_format')
  if (plan.mode !== 'none') await checkToolGrammars(llama, plan.tools)
  if (plan.mode === 'forced') {
    const all = request.tools ?? []
    return jsonGrammar(llama, forcedCallSchema(plan.tools, (tool) => all.indexOf(tool)), 'tools')
  }

  if (format.type === 'json_object') return jsonGrammar(llama, ANY_OBJECT, 'response_format')
  if (format.type !== 'json_schema') return undefined
  const param = format.param ?? 'response_format.schema'
  return jsonGrammar(llama, toGrammarSchema(format.schema, param), param)
}
