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
