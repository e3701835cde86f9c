/**
 * JSON mistakes said with what is wrong and where, never the text: a request body or the access-control file may
 * hold a password or a key.
 */
import {expect} from 'chai'

import type {RouteDefinition} from '../../src/kernel/contracts.js'

import {describeJsonMistake} from '../../src/kernel/json-text.js'
import * as s from '../../src/kernel/schema.js'
import {createApp} from '../../src/server/app.js'
import {listen, type Listening} from '../../src/server/listen.js'

const quiet = {debug() {}, error() {}, info() {}, warn() {}}

describe('JSON mistakes', () => {
  it('names what is wrong and its line and column, quoting nothing of the text', () => {
    const cases: Array<[string, string]> = [
      ['{"key": hunter2}', 'an unexpected character (strings need double quotes; true, false and null are lower case) at line 1 column 9'],
      ['{"a": 1,\n "b": 2,}', 'a property name in double quotes was expected (no trailing commas) at line 2 column 9'],
      ['{"password": "s3cr3t', "a string is not closed on its line (write a line break in a string as \\n) at line 1 column 14"],
      ['{"a": 1', "'}' was expected at its end (line 1 column 8)"],
      ['[1 2]', "',' was expected between values at line 1 column 4"],
      ['{"a": 1} {"b": 2}', 'nothing more was expected after the value at line 1 column 10'],
      ['{"a": "\\q"}', 'an unknown escape after a backslash at line 1 column 7'],
      ['  \n', 'it is empty'],
    ]
    for (const [text, said] of cases) {
      expect(() => JSON.parse(text), text).to.throw()
      expect(describeJsonMistake(text), text).to.equal(said)
    }

    expect(describeJsonMistake('{"key": hunter2}')).not.to.contain('hunter2')
  })

  describe('in a request body', () => {
    let listening: Listening
    const echo: RouteDefinition = {
      body: s.object({model: s.string()}, {unknownKeys: 'keep'}),
      handler: async () => ({body: {ok: true}, kind: 'json'}),
      method: 'POST',
      path: '/echo',
      permission: 'models:read',
      summary: 'echo',
    }

    before(async () => {
      const roomy: RouteDefinition = {...echo, maxJsonBytes: 32 * 1024 * 1024, path: '/roomy'}
      const routes = [echo, roomy].map((definition) => ({definition, plugin: 'test'}))
      listening = await listen(createApp({log: quiet, models: {get: () => expect.fail('no models here'), list: () => []}, routes, version: '0.0.0'}), {host: '127.0.0.1', port: 0})
    })

    it('refuses a body over 16 MiB with a 413 saying the limit, unless the route takes more', async () => {
      const body = JSON.stringify({model: 'm', pcm: 'A'.repeat(17 * 1024 * 1024)})
      const post = (path: string) => fetch(`${listening.url}${path}`, {body, headers: {'content-type': 'application/json'}, method: 'POST'})
      const refused = await post('/echo')
      expect(refused.status).to.equal(413)
      expect(((await refused.json()) as {error: {message: string}}).error.message).to.equal('the request body is larger than the 16.8 MB limit.')
      expect((await post('/roomy')).status).to.equal(200)
    })

    after(async () => listening?.close())

    it('answers a 400 naming the mistake and where it is, without the secret it was sent', async () => {
      const response = await fetch(`${listening.url}/echo`, {body: '{"model": "m",\n  "api_key": sk-s3cr3t}', headers: {'content-type': 'application/json'}, method: 'POST'})
      expect(response.status).to.equal(400)
      const {error} = (await response.json()) as {error: {code: string; message: string}}
      expect(error.code).to.equal('invalid_json')
      expect(error.message).to.equal(
        'the request body is not valid JSON: an unexpected character (strings need double quotes; true, false and null are lower case) at line 2 column 14. Send a JSON object with Content-Type: application/json.',
      )
      expect(error.message).not.to.contain('s3cr3t')
      expect((await fetch(`${listening.url}/echo`, {body: '{"model": "m"}', headers: {'content-type': 'application/json'}, method: 'POST'})).status).to.equal(200)
    })
  })
})
