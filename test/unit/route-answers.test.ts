/**
 * A route's answers held to the media types it declares (`produces`, `events`; src/server/produces.ts): with
 * SERVICE_UNDECLARED_ANSWERS=fail (as the tests' services run) an undeclared one fails the request with a 500 naming
 * the route, otherwise it is sent and logged once.
 */
import {expect} from 'chai'

import type {RouteDefinition, RouteResult} from '../../src/kernel/contracts.js'

import {createApp} from '../../src/server/app.js'
import {listen, type Listening} from '../../src/server/listen.js'
import {answeredMediaType, failsUndeclaredAnswers} from '../../src/server/produces.js'

async function* once(value: unknown) {
  yield value
}

const route = (path: string, answer: () => RouteResult, declared: Partial<RouteDefinition> = {}): RouteDefinition => ({
  handler: async () => answer(),
  method: 'GET',
  path,
  permission: 'public',
  summary: path,
  ...declared,
})

const ROUTES = [
  route('/json', () => ({body: {ok: true}, kind: 'json'})),
  route('/text-declared', () => ({body: 'hello', headers: {'Content-Type': 'text/plain; charset=utf-8'}, kind: 'json'}), {produces: 'text/plain'}),
  route('/text-undeclared', () => ({body: 'hello', kind: 'json'})),
  route('/audio-declared', () => ({body: once(new Uint8Array([1, 2])), contentType: 'audio/wav', kind: 'bytes'}), {produces: ['audio/wav', 'audio/mpeg']}),
  route('/audio-undeclared', () => ({body: once(new Uint8Array([1, 2])), contentType: 'audio/ogg', kind: 'bytes'}), {produces: ['audio/wav']}),
  route('/events-declared', () => ({events: once({n: 1}), kind: 'sse'}), {events: {type: 'object'}}),
  route('/events-undeclared', () => ({events: once({n: 1}), kind: 'sse'})),
].map((definition) => ({definition, plugin: 'test'}))

async function serve(failUndeclaredAnswers: boolean, warnings: string[] = []): Promise<Listening> {
  const log = {debug() {}, error() {}, info() {}, warn: (message: string) => warnings.push(message)}
  return listen(createApp({failUndeclaredAnswers, log, models: {get: () => expect.fail('no models here'), list: () => []}, routes: ROUTES, version: '0.0.0'}), {host: '127.0.0.1', port: 0})
}

describe('route answers against the media types they declare', () => {
  it('fails an undeclared answer with a 500 naming the route, what it answered and what it declares, and keeps serving', async () => {
    const listening = await serve(true)
    try {
      for (const path of ['/json', '/text-declared', '/audio-declared', '/events-declared']) expect((await fetch(`${listening.url}${path}`)).status, path).to.equal(200)
      const answers = await Promise.all(['/text-undeclared', '/audio-undeclared', '/events-undeclared'].map(async (path) => {
        const response = await fetch(`${listening.url}${path}`)
        return [response.status, ((await response.json()) as {error: {message: string}}).error.message]
      }))
      expect(answers).to.deep.equal([
        [500, 'GET /text-undeclared answered text/plain, which it does not declare (it declares application/json): add it to the route\'s `produces`, or `events` for server-sent events.'],
        [500, 'GET /audio-undeclared answered audio/ogg, which it does not declare (it declares audio/wav): add it to the route\'s `produces`, or `events` for server-sent events.'],
        [500, 'GET /events-undeclared answered text/event-stream, which it does not declare (it declares application/json): add it to the route\'s `produces`, or `events` for server-sent events.'],
      ])
      expect((await fetch(`${listening.url}/json`)).status).to.equal(200)
    } finally {
      await listening.close()
    }
  })

  it('otherwise, sends the answer and logs the mismatch once per route and type', async () => {
    const warnings: string[] = []
    const listening = await serve(false, warnings)
    try {
      for (let i = 0; i < 2; i++) {
        const response = await fetch(`${listening.url}/text-undeclared`)
        expect([response.status, await response.text()]).to.deep.equal([200, 'hello'])
      }
      expect(warnings).to.deep.equal(["GET /text-undeclared answered text/plain, which it does not declare (it declares application/json): add it to the route's `produces`, or `events` for server-sent events."])
    } finally {
      await listening.close()
    }
  })

  it('fails by default under SERVICE_UNDECLARED_ANSWERS=fail only', () => {
    expect(['fail', 'log', undefined].map((setting) => failsUndeclaredAnswers(setting))).to.deep.equal([true, false, false])
  })

  it('reads the media type of a JSON result as Koa sends it', () => {
    expect(answeredMediaType({body: {a: 1}, kind: 'json'})).to.equal('application/json')
    expect(answeredMediaType({body: null, kind: 'json'})).to.equal('application/json')
    expect(answeredMediaType({body: '<html></html>', kind: 'json'})).to.equal('text/html')
    expect(answeredMediaType({body: Buffer.from('x'), kind: 'json'})).to.equal('application/octet-stream')
    expect(answeredMediaType({body: Buffer.from('x'), headers: {'content-type': 'image/PNG'}, kind: 'json'})).to.equal('image/png')
  })
})
