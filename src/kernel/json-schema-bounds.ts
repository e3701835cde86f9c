/**
 * The bounds every JSON Schema in a request (a `json_schema` response format, a tool's parameters, an Anthropic tool's
 * `input_schema`) is held to before it reaches an engine, whichever engine's grammar compiler (llama.cpp's, outlines,
 * xgrammar) then reads it. Each is one a compiler cannot meet: a grammar over more schemas than a model could fill
 * takes its memory and time to build, a length or count minimum longer than any model's answer can never be met, and a
 * `$ref` that leads back to itself without an object or array between is an endless rule (llama.cpp: "left recursion";
 * a tree, whose nodes refer to themselves inside `properties` or `items`, is fine).
 */
import {badRequest} from './errors.js'

/** Values (objects, arrays, strings, numbers) one schema may hold: OpenAI allows 5,000 properties and 1,000 enum values. */
export const MAX_SCHEMA_VALUES = 20_000
/** The largest minItems, minLength or minProperties: no model answers with more within its context. */
export const MAX_SCHEMA_MINIMUM = 10_000

const MINIMUMS = ['minItems', 'minLength', 'minProperties']
/** Where a schema's alternatives sit: a `$ref` inside one of them is reached without writing a character first. */
const ALTERNATIVES = ['oneOf', 'anyOf', 'allOf']
const DEFINITION_REF = /^#\/(\$defs|definitions)\/([^/]+)$/

type Json = Record<string, unknown>
const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value)

/** Refuses `schema` (already nested at most MAX_NESTING deep) past the bounds above, naming the field at `path`. */
export function checkJsonSchemaBounds(schema: Json, path: string): void {
  let values = 0
  const pending: Array<[value: unknown, path: string]> = [[schema, path]]
  while (pending.length > 0) {
    const [value, at] = pending.pop()!
    if (++values > MAX_SCHEMA_VALUES)
      throw badRequest(`\`${path}\` holds more than ${MAX_SCHEMA_VALUES} values; a grammar for it would take too long to build. Make the schema smaller.`, path)
    if (Array.isArray(value)) for (const [index, element] of value.entries()) pending.push([element, `${at}[${index}]`])
    if (!isObject(value)) continue
    for (const [key, element] of Object.entries(value)) {
      const keyPath = `${at}.${key}`
      if (MINIMUMS.includes(key) && typeof element === 'number' && element > MAX_SCHEMA_MINIMUM)
        throw badRequest(`\`${keyPath}\` is ${element}; at most ${MAX_SCHEMA_MINIMUM} is accepted, more than any model writes in one answer.`, keyPath)
      pending.push([element, keyPath])
    }
  }

  checkRefCycles(schema, path)
}

/** The definitions a schema node refers to before writing anything: its own `$ref` and those of its alternatives. */
function leadingRefs(node: unknown, at: string, found: Array<[name: string, path: string]> = []): Array<[name: string, path: string]> {
  if (!isObject(node)) return found
  const match = typeof node.$ref === 'string' ? DEFINITION_REF.exec(node.$ref) : null
  if (match) found.push([match[2], `${at}.$ref`])
  for (const keyword of ALTERNATIVES) {
    const alternatives = node[keyword]
    if (Array.isArray(alternatives)) for (const [index, alternative] of alternatives.entries()) leadingRefs(alternative, `${at}.${keyword}[${index}]`, found)
  }

  return found
}

/** Refuses a definition that reaches itself through `$ref`s and alternatives alone. */
function checkRefCycles(schema: Json, path: string): void {
  const definitions = new Map<string, [schema: unknown, path: string]>()
  for (const keyword of ['definitions', '$defs']) {
    const group = schema[keyword]
    if (isObject(group)) for (const [name, definition] of Object.entries(group)) definitions.set(name, [definition, `${path}.${keyword}.${name}`])
  }

  const done = new Set<string>()
  for (const start of definitions.keys()) {
    // Depth-first from each definition, with an explicit stack; `open` holds the chain being followed.
    const open = new Set<string>()
    const stack: Array<{name: string; next: Array<[string, string]>}> = []
    const enter = (name: string) => {
      const [definition, at] = definitions.get(name)!
      open.add(name)
      stack.push({name, next: leadingRefs(definition, at).filter(([target]) => definitions.has(target))})
    }

    if (done.has(start)) continue
    enter(start)
    while (stack.length > 0) {
      const top = stack.at(-1)!
      const edge = top.next.pop()
      if (!edge) {
        open.delete(top.name)
        done.add(top.name)
        stack.pop()
        continue
      }

      const [target, refPath] = edge
      if (open.has(target))
        throw badRequest(
          `\`${refPath}\` leads back to "${target}" without an object or array in between, so the schema describes no finite value; refer to a definition from inside \`properties\` or \`items\` instead.`,
          refPath,
        )
      if (!done.has(target)) enter(target)
    }
  }
}
