/**
 * Turns a JSON Schema from a request (a `json_schema` response format, a tool's parameters) into the subset
 * node-llama-cpp compiles into a grammar (`GbnfJsonSchema`). Output generated under the grammar always matches the
 * schema, so a keyword the grammar cannot enforce (`pattern`, `minimum`, …) is refused with a 400 that names its path,
 * instead of being dropped silently. Annotations (`title`, `examples`, …) are dropped; `description` is kept for
 * tool documentation.
 *
 * Where the grammar generator reads a schema differently from JSON Schema, the schema is rewritten so that the
 * grammar still only produces valid output: `anyOf` becomes `oneOf` (for generation both mean "one of these"),
 * a missing `type` is inferred from the keywords present, `type` lists that include object or array become `oneOf`
 * alternatives, and an empty schema (any value) becomes an explicit "any JSON" alternative. An object with
 * `properties` gets exactly those properties unless `additionalProperties` allows more, which is valid for both
 * required and optional ones.
 */
import type {GbnfJsonSchema} from 'node-llama-cpp'

import {requestError} from './errors.js'

const ANNOTATIONS = new Set(['$schema', '$id', '$comment', 'title', 'default', 'examples', 'deprecated', 'readOnly', 'writeOnly', 'nullable', 'strict'])
const SCALAR_TYPES = new Set(['string', 'number', 'integer', 'boolean', 'null'])
const FORMATS = new Set(['date', 'time', 'date-time'])
const SUPPORTED =
  'type, const, enum, oneOf/anyOf, properties, required, additionalProperties, minProperties, maxProperties, items, prefixItems, minItems, maxItems, minLength, maxLength, format (date, time, date-time), $ref to $defs or definitions, and annotations'
const OBJECT_KEYWORDS = ['properties', 'additionalProperties', 'required', 'minProperties', 'maxProperties']
const ARRAY_KEYWORDS = ['items', 'prefixItems', 'minItems', 'maxItems']
const STRING_KEYWORDS = ['minLength', 'maxLength', 'format']

const ANY_JSON = {
  oneOf: [{type: ['string', 'number', 'boolean', 'null']}, {additionalProperties: true, type: 'object'}, {type: 'array'}],
}

type Json = Record<string, unknown>

const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value)
const isScalar = (value: unknown) => value === null || ['boolean', 'number', 'string'].includes(typeof value)

export function toGrammarSchema(schema: unknown, param: string): GbnfJsonSchema {
  return convert(schema, param) as GbnfJsonSchema
}

function convert(schema: unknown, path: string): Json {
  if (!isObject(schema)) throw requestError(`\`${path}\` must be a JSON Schema object (got ${Array.isArray(schema) ? 'an array' : JSON.stringify(schema)}).`, path)
  const out: Json = {}
  for (const [key, value] of Object.entries(schema)) {
    const at = `${path}.${key}`
    if (ANNOTATIONS.has(key)) continue
    switch (key) {
      case 'description': {
        if (typeof value === 'string') out.description = value
        break
      }

      case 'type': {
        const types = Array.isArray(value) ? value : [value]
        const unknown = types.find((type) => typeof type !== 'string' || (!SCALAR_TYPES.has(type) && type !== 'object' && type !== 'array'))
        if (types.length === 0 || unknown !== undefined)
          throw requestError(`\`${at}\` must be one of string, number, integer, boolean, null, object, array, or a list of them (got ${JSON.stringify(value)}).`, at)
        out.type = Array.isArray(value) && value.length === 1 ? value[0] : value
        break
      }

      case 'const': {
        if (!isScalar(value)) throw requestError(`\`${at}\` must be a string, number, boolean or null: the grammar cannot enforce object or array constants.`, at)
        out.const = value
        break
      }

      case 'enum': {
        if (!Array.isArray(value) || value.length === 0 || !value.every((item) => isScalar(item)))
          throw requestError(`\`${at}\` must be a non-empty list of strings, numbers, booleans or null.`, at)
        out.enum = value
        break
      }

      case 'oneOf':
      case 'anyOf': {
        if (!Array.isArray(value) || value.length === 0) throw requestError(`\`${at}\` must be a non-empty list of schemas.`, at)
        out.oneOf = value.map((alternative, index) => convert(alternative, `${at}[${index}]`))
        break
      }

      case 'properties':
      case '$defs':
      case 'definitions': {
        if (!isObject(value)) throw requestError(`\`${at}\` must be an object of schemas.`, at)
        out[key === 'properties' ? 'properties' : '$defs'] = Object.fromEntries(Object.entries(value).map(([name, property]) => [name, convert(property, `${at}.${name}`)]))
        break
      }

      case 'additionalProperties': {
        if (typeof value === 'boolean') out.additionalProperties = value
        else out.additionalProperties = convert(value, at)
        break
      }

      case 'items': {
        if (Array.isArray(value)) throw requestError(`\`${at}\` must be one schema; give a list of schemas as prefixItems.`, at)
        out.items = convert(value, at)
        break
      }

      case 'prefixItems': {
        if (!Array.isArray(value)) throw requestError(`\`${at}\` must be a list of schemas.`, at)
        out.prefixItems = value.map((item, index) => convert(item, `${at}[${index}]`))
        break
      }

      case 'required': {
        if (!Array.isArray(value) || !value.every((name) => typeof name === 'string')) throw requestError(`\`${at}\` must be a list of property names.`, at)
        break
      }

      case 'minLength':
      case 'maxLength':
      case 'minItems':
      case 'maxItems':
      case 'minProperties':
      case 'maxProperties': {
        if (!Number.isInteger(value) || (value as number) < 0) throw requestError(`\`${at}\` must be a non-negative integer.`, at)
        out[key] = value
        break
      }

      case 'format': {
        if (typeof value !== 'string' || !FORMATS.has(value))
          throw requestError(`\`${at}\` ${JSON.stringify(value)} is not supported: the llama.cpp engine's grammar enforces the string formats date, time and date-time.`, at)
        out.format = value
        break
      }

      case '$ref': {
        const match = typeof value === 'string' ? /^#\/(\$defs|definitions)\/([^/]+)$/.exec(value) : null
        if (!match) throw requestError(`\`${at}\` must point into the schema's own $defs or definitions, as "#/$defs/Name" (got ${JSON.stringify(value)}).`, at)
        out.$ref = `#/$defs/${match[2]}`
        break
      }

      default: {
        throw requestError(`\`${at}\` is not supported: the llama.cpp engine enforces JSON Schema with a grammar that understands ${SUPPORTED}.`, at)
      }
    }
  }

  return normalize(out)
}

/** Rewrites a converted schema where the grammar generator would read it differently (see the module comment). */
function normalize(schema: Json): Json {
  if (schema.const !== undefined || schema.enum || schema.oneOf || schema.$ref) return schema
  if (schema.type === undefined) {
    const has = (keywords: string[]) => keywords.some((keyword) => keyword in schema)
    if (has(OBJECT_KEYWORDS)) schema.type = 'object'
    else if (has(ARRAY_KEYWORDS)) schema.type = 'array'
    else if (has(STRING_KEYWORDS)) schema.type = 'string'
    else return {...ANY_JSON, ...schema}
  }

  if (Array.isArray(schema.type) && schema.type.some((type) => !SCALAR_TYPES.has(type))) {
    const {description, type, ...rest} = schema
    return {...(description === undefined ? {} : {description}), oneOf: (type as string[]).map((single) => normalize({...rest, type: single}))}
  }

  if (schema.type === 'object' && schema.additionalProperties === undefined) schema.additionalProperties = schema.properties === undefined
  return schema
}
