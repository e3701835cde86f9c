/**
 * One schema per route: it validates the request, gives the handler its TypeScript type (`Infer<typeof s>`)
 * and is rendered into the OpenAPI document at /docs. Only the JSON Schema subset the API needs is covered.
 * Validation errors name the offending field as a path (`messages[1].content`) and say what is allowed,
 * because the person reading them is usually looking at their own request body.
 */
import {badRequest} from './errors.js'
import {checkJsonSchemaBounds} from './json-schema-bounds.js'
import {keepAliveMs, KEEP_ALIVE_PATTERN} from './keep-alive.js'

export type JsonSchema = Record<string, unknown>

export interface Schema<T> {
  readonly json: JsonSchema
  readonly optional: boolean
  /** Returns the validated (and, for defaults, completed) value or throws a 400 ServiceError. */
  parse(value: unknown, path?: string): T
}

export type Infer<S> = S extends Schema<infer T> ? T : never

type Shape = Record<string, Schema<unknown>>
type OptionalKeys<S extends Shape> = {[K in keyof S]: S[K]['optional'] extends true ? K : never}[keyof S]
type RequiredKeys<S extends Shape> = Exclude<keyof S, OptionalKeys<S>>
export type InferShape<S extends Shape> = {[K in RequiredKeys<S>]: Infer<S[K]>} & {[K in OptionalKeys<S>]?: Infer<S[K]>}

interface Common {
  description?: string
}

function describe(value: unknown): string {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'an array'
  if (typeof value === 'string') return `"${value.length > 40 ? value.slice(0, 40) + '…' : value}"`
  if (typeof value === 'object') return 'an object'
  return String(value)
}

const fail = (path: string, expected: string, value: unknown): never => {
  throw badRequest(`\`${path || 'body'}\` must be ${expected} (got ${describe(value)}).`, path || undefined)
}

function make<T>(json: JsonSchema, parse: (value: unknown, path: string) => T): Schema<T> {
  return {json, optional: false, parse: (value, path = '') => parse(value, path)}
}

/**
 * The characters (code points, as JSON Schema's lengths count them) of `text`, counted as far as `enough`: an emoji is
 * one character, though JavaScript's length counts it as two. Stopping early keeps a long text's check cheap.
 */
function characters(text: string, enough: number): number {
  let count = 0
  for (const _ of text) if (++count >= enough) break
  return count
}

export function string(options: Common & {enum?: readonly string[]; minLength?: number; maxLength?: number; pattern?: RegExp} = {}): Schema<string> {
  const {description, enum: allowed, maxLength, minLength, pattern} = options
  return make({description, enum: allowed, maxLength, minLength, pattern: pattern?.source, type: 'string'}, (value, path) => {
    if (typeof value !== 'string') return fail(path, 'a string', value)
    if (allowed && !allowed.includes(value)) return fail(path, `one of ${allowed.join(', ')}`, value)
    if (minLength !== undefined && characters(value, minLength) < minLength)
      return fail(path, minLength === 1 ? 'a non-empty string' : `a string of at least ${minLength} characters`, value)
    if (maxLength !== undefined && characters(value, maxLength + 1) > maxLength) return fail(path, `at most ${maxLength} characters long`, value)
    if (pattern && !pattern.test(value)) return fail(path, `a string matching ${pattern.source}`, value)
    return value
  })
}

/** A password or other secret: an error names the field but never repeats its value. */
export function secret(options: Common = {}): Schema<string> {
  return make({description: options.description, format: 'password', minLength: 1, type: 'string', writeOnly: true}, (value, path) => {
    if (typeof value !== 'string' || value === '') throw badRequest(`\`${path || 'body'}\` must be a non-empty string.`, path || undefined)
    return value
  })
}

/** The largest integer a JSON number carries exactly: past it, 2^64 and 2^64 + 1 parse to the same number. */
const EXACT_INTEGER = Number.MAX_SAFE_INTEGER
/** The largest signed 32-bit integer: llama.cpp holds token counts, token ids and top_k in 32 bits. */
export const INT32_MAX = 2 ** 31 - 1

function rangeOf(minimum: number | undefined, maximum: number | undefined): string {
  if (minimum !== undefined && maximum !== undefined) return ` between ${minimum} and ${maximum}`
  if (minimum !== undefined) return ` >= ${minimum}`
  return maximum === undefined ? '' : ` <= ${maximum}`
}

/**
 * Numbers are finite and within their bounds; integers are also exact, so an integer without a declared maximum
 * still stops at 2^53 − 1 rather than reaching an engine rounded.
 */
export function number(options: Common & {integer?: boolean; minimum?: number; maximum?: number} = {}): Schema<number> {
  const {description, integer = false, maximum, minimum} = options
  const expected = (integer ? 'an integer' : 'a number') + rangeOf(minimum, maximum)
  return make({description, maximum, minimum, type: integer ? 'integer' : 'number'}, (value, path) => {
    if (typeof value !== 'number' || !Number.isFinite(value)) return fail(path, expected, value)
    if (integer && !Number.isInteger(value)) return fail(path, expected, value)
    if ((minimum !== undefined && value < minimum) || (maximum !== undefined && value > maximum)) return fail(path, expected, value)
    if (integer && !Number.isSafeInteger(value)) return fail(path, `${expected} of at most ${EXACT_INTEGER} in size`, value)
    return value
  })
}

export const integer = (options: Common & {minimum?: number; maximum?: number} = {}) => number({...options, integer: true})

/**
 * A signed 64-bit integer, as OpenAI declares `seed`. JSON numbers past 2^53 arrive rounded, so the check is on
 * the rounded value: 2^63 − 1 as sent parses to 2^63 and is accepted, 2^80 is refused.
 */
export function int64(options: Common = {}): Schema<number> {
  const limit = 2 ** 63
  return make({description: options.description, format: 'int64', type: 'integer'}, (value, path) =>
    typeof value === 'number' && Number.isInteger(value) && Math.abs(value) <= limit
      ? value
      : fail(path, 'a 64-bit integer (between -9223372036854775808 and 9223372036854775807)', value),
  )
}

/**
 * A yes or no written as text, as Python's clients write one: RAGFlow sends `"return_documents": "true"`, and
 * requests puts `wait_ready=False` in a query string. Case does not matter; anything else is no answer (undefined).
 */
export function booleanText(text: string): boolean | undefined {
  const lowered = text.toLowerCase()
  return lowered === 'true' || lowered === '1' ? true : lowered === 'false' || lowered === '0' ? false : undefined
}

/** `fromText`: also "true" and "false" as text (see booleanText), for the fields Xinference's clients send that way. */
export function boolean(options: Common & {fromText?: boolean} = {}): Schema<boolean> {
  const {description, fromText = false} = options
  const json = fromText ? {anyOf: [{type: 'boolean'}, {enum: ['true', 'false', 'True', 'False', '1', '0'], type: 'string'}], description} : {description, type: 'boolean'}
  return make(json, (value, path) => {
    if (typeof value === 'boolean') return value
    const read = fromText && typeof value === 'string' ? booleanText(value) : undefined
    return read ?? fail(path, fromText ? 'true or false (or the text "true" or "false")' : 'true or false', value)
  })
}

export function literal<const T extends string | number | boolean>(expected: T, options: Common = {}): Schema<T> {
  return make({const: expected, description: options.description}, (value, path) =>
    value === expected ? (value as T) : fail(path, JSON.stringify(expected), value),
  )
}

/**
 * How deep a free-form value (a JSON Schema, tool parameters, engine parameters) may nest: 64 levels holds 30 levels
 * of nested objects in a JSON Schema (each takes two: `properties`, then the name), three times what OpenAI allows in
 * its structured outputs, while every consumer after the schema layer — the model processes' message channel (whose
 * decoder overflows its stack near 1,700), grammar compilers, JSON.stringify — stays far from its recursion limit.
 */
export const MAX_NESTING = 64

/**
 * The path of the first place where `value` nests deeper than `limit` levels below `path`, if any. The walk keeps its
 * own stack: JSON.parse reads a body nested 100,000 deep, and a recursive check would overflow on it.
 */
export function nestedPast(value: unknown, limit: number, path = ''): string | undefined {
  if (typeof value !== 'object' || value === null) return undefined
  // Only objects and arrays are walked into, so a long list of numbers or strings costs one pass over it.
  const pending: Array<[value: object, path: string, depth: number]> = [[value, path, 0]]
  while (pending.length > 0) {
    const [current, at, depth] = pending.pop()!
    if (depth >= limit) return at
    if (Array.isArray(current)) {
      for (let index = 0; index < current.length; index++) {
        const element: unknown = current[index]
        if (typeof element === 'object' && element !== null) pending.push([element, `${at}[${index}]`, depth + 1])
      }
    } else {
      for (const key in current) {
        const element: unknown = (current as Record<string, unknown>)[key]
        if (typeof element === 'object' && element !== null) pending.push([element, at ? `${at}.${key}` : key, depth + 1])
      }
    }
  }

  return undefined
}

/** Refuses a free-form value nested past MAX_NESTING, naming where it does; for values a route parses itself (JSON text). */
export function checkNesting(value: unknown, path: string): void {
  const deep = nestedPast(value, MAX_NESTING, path)
  if (deep === undefined) return
  const where = deep.length > 120 ? `${deep.slice(0, 120)}…` : deep
  throw badRequest(`\`${path || 'body'}\` nests objects and arrays more than ${MAX_NESTING} levels deep (at \`${where}\`); flatten it.`, path || undefined)
}

/** Any JSON value, nested at most MAX_NESTING levels. */
export function unknown(options: Common = {}): Schema<unknown> {
  return make({description: options.description}, (value, path) => {
    checkNesting(value, path)
    return value
  })
}

export function array<T>(item: Schema<T>, options: Common & {minItems?: number; maxItems?: number} = {}): Schema<T[]> {
  const {description, maxItems, minItems} = options
  return make({description, items: item.json, maxItems, minItems, type: 'array'}, (value, path) => {
    if (!Array.isArray(value)) return fail(path, 'an array', value)
    if (minItems !== undefined && value.length < minItems)
      return fail(path, minItems === 1 ? 'a non-empty array' : `an array of at least ${minItems} items`, value)
    if (maxItems !== undefined && value.length > maxItems) return fail(path, `an array of at most ${maxItems} items`, value)
    return value.map((element, index) => item.parse(element, `${path}[${index}]`))
  })
}

/** A JSON Schema object a grammar compiler will read, held to json-schema-bounds.ts's bounds as well as to MAX_NESTING. */
export function jsonSchema(options: Common = {}): Schema<Record<string, unknown>> {
  return make({additionalProperties: true, description: options.description, type: 'object'}, (value, path) => {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return fail(path, 'a JSON Schema object', value)
    checkNesting(value, path)
    checkJsonSchemaBounds(value as Record<string, unknown>, path)
    return value as Record<string, unknown>
  })
}

export function record<T>(value: Schema<T>, options: Common = {}): Schema<Record<string, T>> {
  return make({additionalProperties: value.json, description: options.description, type: 'object'}, (input, path) => {
    if (typeof input !== 'object' || input === null || Array.isArray(input)) return fail(path, 'an object', input)
    const out: Record<string, T> = {}
    for (const [key, element] of Object.entries(input)) out[key] = value.parse(element, path ? `${path}.${key}` : key)
    return out
  })
}

/**
 * `unknownKeys`: 'reject' (default) answers 400 naming the field, which catches typos such as `max_token`;
 * 'keep' passes them through untouched (launch requests carry engine parameters this way);
 * 'strip' drops them silently (for fields OpenAI clients send that we do not act on).
 */
export function object<S extends Shape>(
  shape: S,
  options: Common & {unknownKeys?: 'keep' | 'reject' | 'strip'; title?: string} = {},
): Schema<InferShape<S>> {
  const {description, title, unknownKeys = 'reject'} = options
  const required = Object.entries(shape)
    .filter(([, schema]) => !schema.optional)
    .map(([key]) => key)
  const properties = Object.fromEntries(Object.entries(shape).map(([key, schema]) => [key, schema.json]))
  return make(
    {additionalProperties: unknownKeys !== 'reject', description, properties, required: required.length > 0 ? required : undefined, title, type: 'object'},
    (value, path) => {
      if (typeof value !== 'object' || value === null || Array.isArray(value)) return fail(path, 'a JSON object', value)
      const input = value as Record<string, unknown>
      const out: Record<string, unknown> = {}
      for (const [key, schema] of Object.entries(shape)) {
        const fieldPath = path ? `${path}.${key}` : key
        if (input[key] === undefined) {
          if (!schema.optional) throw badRequest(`\`${fieldPath}\` is required.`, fieldPath)
          const fallback = schema.parse(undefined, fieldPath)
          if (fallback !== undefined) out[key] = fallback
          continue
        }

        out[key] = schema.parse(input[key], fieldPath)
      }

      for (const key of Object.keys(input)) {
        if (Object.hasOwn(shape, key)) continue
        if (unknownKeys === 'reject') {
          const fieldPath = path ? `${path}.${key}` : key
          throw badRequest(
            Object.keys(shape).length === 0 ? `\`${fieldPath}\` is not taken: \`${path || 'body'}\` takes no fields.` : `\`${fieldPath}\` is not a known field. Known fields: ${Object.keys(shape).join(', ')}.`,
            fieldPath,
            'unknown_parameter',
          )
        }

        if (unknownKeys === 'keep') {
          checkNesting(input[key], path ? `${path}.${key}` : key)
          out[key] = input[key]
        }
      }

      return out as InferShape<S>
    },
  )
}

export function optional<T>(schema: Schema<T>, defaultValue?: T): Schema<T | undefined> & {optional: true} {
  return {
    json: defaultValue === undefined ? schema.json : {...schema.json, default: defaultValue},
    optional: true,
    parse: (value, path = '') => (value === undefined || value === null ? defaultValue : schema.parse(value, path)),
  }
}

export function nullable<T>(schema: Schema<T>): Schema<T | null> {
  return make({anyOf: [schema.json, {type: 'null'}]}, (value, path) => (value === null ? null : schema.parse(value, path)))
}

/**
 * Tries each alternative in turn; the error names every accepted form rather than the last failure. A value nested too
 * deeply is refused as that first, since every alternative would fail on it and the forms would not say why.
 */
export function union<const T extends readonly Schema<unknown>[]>(
  alternatives: T,
  expected: string,
  options: Common = {},
): Schema<Infer<T[number]>> {
  return make({anyOf: alternatives.map((a) => a.json), description: options.description}, (value, path) => {
    checkNesting(value, path)
    for (const alternative of alternatives) {
      try {
        return alternative.parse(value, path) as Infer<T[number]>
      } catch {}
    }

    return fail(path, expected, value)
  })
}

/**
 * Xinference's `kwargs`: further arguments as the JSON text of an object (its clients send `"kwargs": "{}"` with every
 * rerank and speech request, and form fields can carry nothing else), or as the object itself; either is checked
 * against `schema`, so a key the route does not take is named as `kwargs.<key>`.
 */
export function jsonText<T>(schema: Schema<T>, options: Common = {}): Schema<T> {
  return make({anyOf: [schema.json, {contentMediaType: 'application/json', type: 'string'}], description: options.description}, (value, path) => {
    if (typeof value !== 'string') return schema.parse(value, path)
    let parsed: unknown
    try {
      parsed = JSON.parse(value)
    } catch {
      return fail(path, 'JSON text (or the JSON value itself)', value)
    }

    return schema.parse(parsed, path)
  })
}

/** A schema whose parse runs after another's, for checks that span fields. */
export function refine<T>(schema: Schema<T>, check: (value: T, path: string) => T): Schema<T> {
  return {...schema, parse: (value, path = '') => check(schema.parse(value, path), path)}
}

/** Ollama's `keep_alive` (keep-alive.ts): how long the model stays loaded once idle, as a duration or seconds; negative is forever. */
export function keepAlive(options: Common = {}): Schema<number | string> {
  const description = options.description ?? 'How long the model stays loaded once idle: a duration such as "5m" or "1h30m", or seconds; -1 keeps it loaded, 0 unloads it after this request.'
  return make({anyOf: [{maxLength: 32, pattern: KEEP_ALIVE_PATTERN.source, type: 'string'}, {type: 'number'}], description}, (value, path) =>
    (typeof value === 'string' || typeof value === 'number') && keepAliveMs(value) !== undefined
      ? value
      : fail(path, 'a duration such as "5m", "90s" or "1h30m", a number of seconds (at most a year), or -1 to keep the model loaded', value),
  )
}
