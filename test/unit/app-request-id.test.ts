/**
 * The app's request ids in process: echoed on every answer, errors and unknown routes included, and the context
 * a route's work (and so every log line it writes) runs in.
 */
import {expect} from 'chai'

import type {RouteDefinition} from '../../src/kernel/contracts.js'

import {ServiceError} from '../../src/kernel/errors.js'
import {currentRequestId} from '../../src/kernel/request-context.js'
import {createApp} from '../../src/server/app.js'
import {listen, type Listening} from '../../src/server/listen.js'

const quiet = {debug() {}, error() {}, info() {}, warn() {}}

describe('app request ids', () => {
  const seen: Array<string | undefined> = []
  let listening: Listening

  const route = (path: string, fail: boolean): RouteDefinition => ({
    async handler() {
      await new Promise((resolve) => setImmediate(resolve))
      seen.push(currentRequestId())
      if (fail) throw new ServiceError(409, 'conflict', 'refused on purpose')
      return {body: {ok: true}, kind: 'json'}
    },
    method: 'GET',
    path,
    permission: 'models:read',
    summary: path,
  })

  before(async () => {
    const routes = [route('/ok', false), route('/refused', true), route('/anthropic/v1/ok', false), route('/anthropic/v1/refused', true)].map((definition) => ({definition, plugin: 'test'}))
    listening = await listen(createApp({log: quiet, models: {get: () => expect.fail('no models here'), list: () => []}, routes, version: '0.0.0'}), {host: '127.0.0.1', port: 0})
  })

  after(async () => listening?.close())

  it("runs a route's work as part of the request, under the caller's id, and echoes it on a success and on an error", async () => {
    const ok = await fetch(`${listening.url}/ok`, {headers: {'X-Request-Id': 'req-ok'}})
    const refused = await fetch(`${listening.url}/refused`, {headers: {'X-Request-Id': 'req-refused'}})
    expect([ok.status, refused.status]).to.deep.equal([200, 409])
    expect([ok.headers.get('x-request-id'), refused.headers.get('x-request-id')]).to.deep.equal(['req-ok', 'req-refused'])
    expect(seen).to.deep.equal(['req-ok', 'req-refused'])
  })

  it("answers under /anthropic with the id in `request-id` too, where Anthropic's SDK reads it, and only there", async () => {
    const ok = await fetch(`${listening.url}/anthropic/v1/ok`, {headers: {'X-Request-Id': 'req-anthropic'}})
    const refused = await fetch(`${listening.url}/anthropic/v1/refused`)
    const missing = await fetch(`${listening.url}/anthropic/v1/nowhere`)
    expect([ok.status, refused.status, missing.status]).to.deep.equal([200, 409, 404])
    expect(ok.headers.get('request-id')).to.equal('req-anthropic')
    for (const response of [refused, missing]) expect(response.headers.get('request-id')).to.match(/^[0-9a-f-]{36}$/).and.equal(response.headers.get('x-request-id'))
    expect((await fetch(`${listening.url}/ok`)).headers.get('request-id')).to.equal(null)
  })

  it('echoes a made id on a route that does not exist', async () => {
    const missing = await fetch(`${listening.url}/nowhere`)
    expect(missing.status).to.equal(404)
    expect(missing.headers.get('x-request-id')).to.match(/^[0-9a-f-]{36}$/)
  })
})
