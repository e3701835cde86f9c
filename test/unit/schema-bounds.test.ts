/**
 * The schema layer's bounds on free-form values (issue 32, item 3): any JSON value a route passes on unchecked nests at
 * most MAX_NESTING deep, and a JSON Schema that a grammar compiler will read is held to json-schema-bounds.ts's
 * bounds, each refused with a 400 naming the field and the limit.
 */
import {expect} from 'chai'

import {parseFamily} from '../../src/kernel/catalogue.js'
import {MAX_SCHEMA_MINIMUM, MAX_SCHEMA_VALUES} from '../../src/kernel/json-schema-bounds.js'
import * as s from '../../src/kernel/schema.js'

/** `depth` objects, each inside the one before, as JSON text: what a client sends, parsed as the body parser does. */
const nestedJson = (depth: number) => JSON.parse('{"a":'.repeat(depth - 1) + '{}' + '}'.repeat(depth - 1)) as Record<string, unknown>

function refusal(run: () => unknown) {
  try {
    run()
  } catch (error) {
    return error as {status: number; message: string; param: string | null}
  }

  throw new Error('expected a refusal')
}

describe('schema bounds on free-form values', () => {
  const body = s.object({metadata: s.optional(s.unknown()), schema: s.optional(s.jsonSchema())})

  it('accepts a value nested MAX_NESTING deep and refuses one a level deeper, naming the field and the limit', () => {
    expect(() => body.parse({metadata: nestedJson(s.MAX_NESTING)})).not.to.throw()
    const error = refusal(() => body.parse({metadata: nestedJson(s.MAX_NESTING + 1)}))
    expect(error).to.include({param: 'metadata', status: 400})
    expect(error.message).to.match(/^`metadata` nests objects and arrays more than 64 levels deep \(at `metadata\.a\.a/)
  })

  it('refuses a value nested 100,000 deep with a 400, not a stack overflow', () => {
    const error = refusal(() => body.parse({metadata: nestedJson(100_000)}))
    expect(error).to.include({param: 'metadata', status: 400})
    const arrays = JSON.parse('['.repeat(100_000) + ']'.repeat(100_000))
    expect(refusal(() => body.parse({metadata: arrays}))).to.include({param: 'metadata', status: 400})
  })

  it('says a value is too deep rather than that it is none of the forms a union takes', () => {
    const kwargs = s.union([s.string(), s.record(s.unknown())], 'a JSON object, or its text')
    const error = refusal(() => kwargs.parse(nestedJson(3000), 'kwargs'))
    expect(error).to.include({param: 'kwargs', status: 400})
    expect(error.message).to.include('more than 64 levels deep')
  })

  it('bounds the fields an object keeps unchecked too', () => {
    const launch = s.object({model_uid: s.string()}, {unknownKeys: 'keep'})
    expect(refusal(() => launch.parse({model_uid: 'm', n_ctx: nestedJson(3000)}))).to.include({param: 'n_ctx', status: 400})
    expect(launch.parse({model_uid: 'm', n_ctx: {a: [1]}})).to.deep.equal({model_uid: 'm', n_ctx: {a: [1]}})
  })

  it('bounds JSON text parsed outside a schema too: a registration sent as a string', () => {
    const error = refusal(() => parseFamily(`{"model_name":"m","x":${'['.repeat(100_000)}${']'.repeat(100_000)}}`, '`model` is a string but', 'model'))
    expect(error).to.include({param: 'model', status: 400})
    expect(error.message).to.match(/^`model` nests objects and arrays more than 64 levels deep \(at `model\.x\[0\]/)
  })

  it('refuses a JSON Schema nested 3,000 deep, as a client sends it in a response format or a tool', () => {
    let schema: Record<string, unknown> = {type: 'string'}
    for (let level = 0; level < 1500; level++) schema = {properties: {a: schema}, type: 'object'}
    const error = refusal(() => body.parse(JSON.parse(JSON.stringify({schema}))))
    expect(error).to.include({param: 'schema', status: 400})
  })

  it('refuses a minimum length or count no answer can meet, naming the keyword', () => {
    for (const [keyword, schema] of [
      ['minItems', {items: {type: 'integer'}, minItems: 200_000, type: 'array'}],
      ['minLength', {minLength: 10_000_000, type: 'string'}],
    ] as const) {
      const error = refusal(() => body.parse({schema: {properties: {list: schema}, type: 'object'}}))
      expect(error).to.include({param: `schema.properties.list.${keyword}`, status: 400})
      expect(error.message).to.include(`at most ${MAX_SCHEMA_MINIMUM}`)
    }

    expect(() => body.parse({schema: {maxLength: 100_000, minLength: MAX_SCHEMA_MINIMUM, type: 'string'}})).not.to.throw()
  })

  it(`refuses a schema of more than ${MAX_SCHEMA_VALUES} values`, () => {
    const error = refusal(() => body.parse({schema: {enum: Array.from({length: MAX_SCHEMA_VALUES}, (_, index) => `v${index}`), type: 'string'}}))
    expect(error).to.include({param: 'schema', status: 400})
    expect(error.message).to.include(`more than ${MAX_SCHEMA_VALUES} values`)
  })

  it('refuses a $ref that leads back to itself through references and alternatives alone, and accepts a tree', () => {
    const self = refusal(() => body.parse({schema: {$defs: {A: {$ref: '#/$defs/A'}}, $ref: '#/$defs/A'}}))
    expect(self).to.include({param: 'schema.$defs.A.$ref', status: 400})
    expect(self.message).to.include('leads back to "A"')
    const cycle = refusal(() => body.parse({schema: {$defs: {A: {anyOf: [{type: 'null'}, {$ref: '#/definitions/B'}]}}, definitions: {B: {oneOf: [{$ref: '#/$defs/A'}]}}}}))
    expect(cycle.status).to.equal(400)
    expect(cycle.param).to.match(/^schema\.(\$defs\.A\.anyOf\[1\]|definitions\.B\.oneOf\[0\])\.\$ref$/)
    const tree = {$defs: {Node: {properties: {children: {items: {$ref: '#/$defs/Node'}, type: 'array'}, name: {type: 'string'}}, type: 'object'}}, $ref: '#/$defs/Node'}
    expect(body.parse({schema: tree})).to.deep.equal({schema: tree})
  })
})
