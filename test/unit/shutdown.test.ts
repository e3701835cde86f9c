/**
 * The HTTP side of a service's shutdown, in process: once the shutdown signal is aborted, requests still arriving
 * get a 503 in their API's shape and a closed connection, live streams end with an error event, and the server
 * closes as soon as the last response is done.
 */
import {expect} from 'chai'

import type {RouteDefinition} from '../../src/kernel/contracts.js'

import {ServiceError} from '../../src/kernel/errors.js'
import {createApp} from '../../src/server/app.js'
import {listen} from '../../src/server/listen.js'

const quiet = {debug() {}, error() {}, info() {}, warn() {}}
const SHUTTING_DOWN = new ServiceError(503, 'shutting_down', 'the service is shutting down; this request was not completed.')

/** A stream that sends one event, then waits for events that never come (a model still thinking). */
const streamRoute = (path: string): RouteDefinition => ({
  async handler() {
    async function* events() {
      yield {n: 1}
      await new Promise(() => {})
    }

    return {events: events(), kind: 'sse', terminator: '[DONE]'}
  },
  method: 'POST',
  path,
  permission: 'public',
  summary: 'a stream',
})

async function serve() {
  const shutdown = new AbortController()
  const routes = [streamRoute('/v1/stream'), streamRoute('/anthropic/v1/stream')].map((definition) => ({definition, plugin: 'test'}))
  const listening = await listen(createApp({log: quiet, models: {get: () => expect.fail('no models here'), list: () => []}, routes, shutdown: shutdown.signal, version: '0.0.0'}), {host: '127.0.0.1', port: 0})
  return {listening, shutdown}
}

describe('shutdown (app and server)', () => {
  it('refuses requests once shutting down with a 503 in the route family’s shape, closing the connection', async () => {
    const {listening, shutdown} = await serve()
    shutdown.abort(SHUTTING_DOWN)
    const openai = await fetch(`${listening.url}/v1/stream`, {method: 'POST'})
    expect(openai.status).to.equal(503)
    expect(openai.headers.get('connection')).to.equal('close')
    expect(await openai.json()).to.deep.equal({detail: SHUTTING_DOWN.message, error: {code: 'shutting_down', message: SHUTTING_DOWN.message, param: null, type: 'server_error'}})
    const anthropic = await fetch(`${listening.url}/anthropic/v1/stream`, {method: 'POST'})
    expect(await anthropic.json()).to.deep.equal({error: {message: SHUTTING_DOWN.message, type: 'overloaded_error'}, type: 'error'})
    await listening.close()
  })

  it('ends live streams with an error event in their family’s shape, then closes once they are done', async () => {
    const {listening, shutdown} = await serve()
    const [openai, anthropic] = await Promise.all(['/v1/stream', '/anthropic/v1/stream'].map((path) => fetch(`${listening.url}${path}`, {method: 'POST'})))
    const readers = [openai, anthropic].map((response) => response.body!.getReader())
    for (const reader of readers) expect((await reader.read()).done).to.equal(false)
    listening.stopAccepting()
    shutdown.abort(SHUTTING_DOWN)
    const rest = await Promise.all(readers.map(async (reader) => {
      let text = ''
      for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) text += new TextDecoder().decode(chunk.value)
      return text
    }))
    expect(rest[0]).to.equal(`data: ${JSON.stringify({error: {code: 'shutting_down', message: SHUTTING_DOWN.message, param: null, type: 'server_error'}})}\n\n`)
    expect(rest[1]).to.equal(`event: error\ndata: ${JSON.stringify({error: {message: SHUTTING_DOWN.message, type: 'overloaded_error'}, type: 'error'})}\n\n`)
    // Closes with the last response, well within the grace period that would cut open requests.
    await listening.close(120_000)
  })
})
