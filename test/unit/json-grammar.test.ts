import {expect} from 'chai'
import type {GbnfJsonSchema} from 'node-llama-cpp'

import {useErrorFactory} from '../../plugins/engine-llama-cpp/src/errors.js'
import {boundJsonGrammar, jsonGrammar} from '../../plugins/engine-llama-cpp/src/grammar.js'
import {errorFactory} from '../../src/kernel/errors.js'

describe('JSON grammar bounds', function () {
  this.timeout(30_000)

  it('writes integers as at most 16 plain digits, numbers with a two-digit exponent, and ends where the value ends', async () => {
    const {getLlama} = await import('node-llama-cpp')
    const llama = await getLlama({build: 'never', gpu: false})
    try {
      const schema = {properties: {age: {type: 'integer'}, ratio: {type: 'number'}}, type: 'object'} as GbnfJsonSchema
      const rules = Object.fromEntries(
        (await jsonGrammar(llama, schema, 'response_format.schema')).grammar.split('\n').map((line) => line.split(' ::= ') as [string, string]),
      )
      expect(rules['integer-number-rule']).to.equal('"-"? ("0" | [1-9] [0-9]{0,15})')
      expect(rules['fractional-number-rule']).to.equal('"-"? ("0" | [1-9] [0-9]{0,15}) ("." [0-9]{1,16})? ([eE] [-+]? [0-9]{1,2})?')
      expect(rules.root).to.match(/"}"$/)
    } finally {
      await llama.dispose()
    }
  })

  it('answers a schema llama.cpp cannot compile (a bound repeated past its limit) with a 400 naming the field and why', async () => {
    useErrorFactory(errorFactory)
    const {getLlama} = await import('node-llama-cpp')
    const llama = await getLlama({build: 'never', gpu: false})
    try {
      for (const schema of [{items: {type: 'integer'}, minItems: 2000, type: 'array'}, {maxLength: 2000, type: 'string'}]) {
        const error = await jsonGrammar(llama, schema as GbnfJsonSchema, 'response_format.json_schema.schema').catch((failure: unknown) => failure)
        expect(error).to.include({param: 'response_format.json_schema.schema', status: 400})
        expect((error as Error).message).to.include('repeats a value more than about 2,000 times')
      }
    } finally {
      await llama.dispose()
    }
  })

  it('refuses a grammar whose root does not end as node-llama-cpp writes it, instead of losing the bounds', () => {
    expect(() => boundJsonGrammar('root ::= "{" "}"')).to.throw(/no longer ends its root rule/)
  })
})
