/**
 * Validates our responses against the official OpenAI API description in shared/conformance. The whole
 * document is loaded once; any component schema can then be checked by name.
 */
import {Ajv2020} from 'ajv/dist/2020.js'
import {existsSync, readFileSync} from 'node:fs'
import {join} from 'node:path'
import {parse} from 'yaml'

import {ROOT} from './service.js'

const DOCUMENT = [join(ROOT, '../shared/conformance/openai-openapi.yaml'), join(ROOT, 'shared/conformance/openai-openapi.yaml')].find((path) => existsSync(path))

let ajv: Ajv2020 | undefined
let components: {schemas: Record<string, Record<string, unknown>>} | undefined

function validator(): Ajv2020 {
  if (ajv) return ajv
  if (!DOCUMENT) throw new Error('shared/conformance/openai-openapi.yaml is missing: the conformance material must sit beside the repository')
  const document = parse(readFileSync(DOCUMENT, 'utf8')) as {components: typeof components}
  components = document.components
  // OpenAPI carries extension keywords (x-stainless-const, x-oaiMeta) and formats such as "unixtime" that
  // are documentation, not constraints.
  ajv = new Ajv2020({allErrors: true, strict: false, validateFormats: false})
  ajv.addSchema({$id: 'openai', components: withoutOpenApiNullable(document.components)})
  return ajv
}

/** OpenAPI 3.0's `nullable: true` is not JSON Schema; it becomes a `null` alternative of the type. */
function withoutOpenApiNullable(node: unknown): unknown {
  if (Array.isArray(node)) return node.map((item) => withoutOpenApiNullable(item))
  if (typeof node !== 'object' || node === null) return node
  const {nullable, ...rest} = node as Record<string, unknown>
  const out = Object.fromEntries(Object.entries(rest).map(([key, value]) => [key, withoutOpenApiNullable(value)]))
  if (nullable !== true) return out
  if (Array.isArray(out.enum)) out.enum = [...out.enum, null]
  return typeof out.type === 'string' ? {...out, type: [out.type, 'null']} : {anyOf: [out, {type: 'null'}]}
}

/** Throws with every violation listed when `value` does not match the named OpenAI schema. */
export function assertOpenAiSchema(schemaName: string, value: unknown): void {
  const validate = validator().getSchema(`openai#/components/schemas/${schemaName}`)
  if (!validate) throw new Error(`no schema ${schemaName} in the OpenAI document`)
  if (!validate(value))
    throw new Error(`response does not match OpenAI ${schemaName}:\n${JSON.stringify(validate.errors, null, 2)}\nvalue: ${JSON.stringify(value)}`)
}

/** The fields an OpenAI schema requires, its `allOf` parts' included: what a client may count on finding, or must send. */
export function openAiRequired(schemaName: string): string[] {
  validator()
  const collect = (schema: Record<string, unknown>): string[] => {
    if (typeof schema.$ref === 'string') return collect(components!.schemas[schema.$ref.replace('#/components/schemas/', '')])
    return [...((schema.required as string[]) ?? []), ...((schema.allOf as Array<Record<string, unknown>>) ?? []).flatMap((part) => collect(part))]
  }

  const schema = components!.schemas[schemaName]
  if (!schema) throw new Error(`no schema ${schemaName} in the OpenAI document`)
  return collect(schema)
}
