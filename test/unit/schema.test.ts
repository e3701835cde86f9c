import {expect} from 'chai'

import * as s from '../../src/kernel/schema.js'

describe('schema', () => {
  const request = s.object({
    messages: s.array(s.object({content: s.string(), role: s.string({enum: ['user', 'assistant']})}), {minItems: 1}),
    model: s.string({minLength: 1}),
    temperature: s.optional(s.number({maximum: 2, minimum: 0}), 1),
  })

  const failure = (value: unknown) => {
    try {
      request.parse(value)
    } catch (error) {
      return error as {status: number; message: string; param: string | null; code: string}
    }

    throw new Error('expected a validation error')
  }

  it('returns the value with defaults filled in', () => {
    expect(request.parse({messages: [{content: 'hi', role: 'user'}], model: 'm'})).to.deep.equal({messages: [{content: 'hi', role: 'user'}], model: 'm', temperature: 1})
  })

  it('names the field by its path and says what is allowed', () => {
    expect(failure({messages: [{content: 'hi', role: 'bot'}], model: 'm'})).to.include({
      message: '`messages[0].role` must be one of user, assistant (got "bot").',
      param: 'messages[0].role',
      status: 400,
    })
    expect(failure({messages: [], model: 'm'}).message).to.equal('`messages` must be a non-empty array (got an array).')
    expect(failure({messages: [{content: 'hi', role: 'user'}]}).message).to.equal('`model` is required.')
    expect(failure({messages: [{content: 'hi', role: 'user'}], model: 'm', temperature: 3}).message).to.equal('`temperature` must be a number between 0 and 2 (got 3).')
    expect(failure({messages: [{content: 'hi', role: 'user'}], model: 'm', top: 1})).to.include({code: 'unknown_parameter', param: 'top'})
    expect(failure('text').message).to.equal('`body` must be a JSON object (got "text").')
  })

  it('treats names an object inherits (constructor, toString) as the unknown fields they are', () => {
    const body = JSON.parse('{"messages": [{"content": "hi", "role": "user"}], "model": "m", "constructor": 5}')
    expect(failure(body)).to.include({code: 'unknown_parameter', param: 'constructor'})
    const kept = s.object({model: s.string()}, {unknownKeys: 'keep'}).parse(JSON.parse('{"model": "m", "toString": "x"}'))
    expect(Object.hasOwn(kept, 'toString')).to.equal(true)
  })

  it('counts a string\'s length in characters, as JSON Schema does, an emoji as one', () => {
    const short = s.string({maxLength: 2, minLength: 2})
    expect(short.parse('😀😀')).to.equal('😀😀')
    expect(() => short.parse('😀😀😀')).to.throw('at most 2 characters long')
    expect(() => short.parse('😀')).to.throw('at least 2 characters')
  })

  it('refuses numbers that are not finite, and integers that a JSON number does not hold exactly', () => {
    const count = s.integer({minimum: 1})
    expect(() => count.parse(Number.POSITIVE_INFINITY, 'max_tokens')).to.throw('`max_tokens` must be an integer >= 1 (got Infinity).')
    expect(() => count.parse(Number.NaN, 'max_tokens')).to.throw('`max_tokens` must be an integer >= 1 (got NaN).')
    expect(() => count.parse(1e308, 'max_tokens')).to.throw('`max_tokens` must be an integer >= 1 of at most 9007199254740991 in size (got 1e+308).')
    expect(() => count.parse(2 ** 64, 'top_n')).to.throw('`top_n` must be an integer >= 1 of at most 9007199254740991 in size')
    expect(count.parse(Number.MAX_SAFE_INTEGER)).to.equal(Number.MAX_SAFE_INTEGER)
    const bounded = s.integer({maximum: s.INT32_MAX, minimum: 0})
    expect(() => bounded.parse(1e12, 'top_k')).to.throw('`top_k` must be an integer between 0 and 2147483647 (got 1000000000000).')
  })

  it('takes 64-bit integers whole, as OpenAI declares seed, and nothing beyond', () => {
    const seed = s.int64()
    expect(seed.parse(-1)).to.equal(-1)
    expect(seed.parse(JSON.parse('9223372036854775807'))).to.equal(2 ** 63)
    expect(seed.parse(JSON.parse('-9223372036854775808'))).to.equal(-(2 ** 63))
    for (const value of [2 ** 80, -(2 ** 64), 1.5, '1'])
      expect(() => seed.parse(value, 'seed'), String(value)).to.throw('`seed` must be a 64-bit integer (between -9223372036854775808 and 9223372036854775807)')
    expect(seed.json).to.deep.include({format: 'int64', type: 'integer'})
  })

  it('describes itself as JSON Schema for the API reference', () => {
    expect(request.json).to.deep.include({required: ['messages', 'model'], type: 'object'})
    expect((request.json.properties as Record<string, unknown>).temperature).to.deep.include({default: 1, maximum: 2, minimum: 0, type: 'number'})
  })

  it('tries union alternatives in order and reports every accepted form', () => {
    const stop = s.union([s.string(), s.array(s.string())], 'a string or an array of strings')
    expect(stop.parse('x')).to.equal('x')
    expect(stop.parse(['x'])).to.deep.equal(['x'])
    expect(() => stop.parse(5, 'stop')).to.throw('`stop` must be a string or an array of strings (got 5).')
  })
})
