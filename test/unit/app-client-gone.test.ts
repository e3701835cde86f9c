/**
 * A client that goes away while its answer is written: Koa reports the failed write as an app error, which it prints
 * with its stack unless told otherwise. Clients leave all the time, so that is no error of the service's; other
 * failures to write an answer go to the service's log, never straight to stderr.
 */
import {expect} from 'chai'
import {request} from 'node:http'
import {setTimeout as delay} from 'node:timers/promises'

import type {RouteDefinition} from '../../src/kernel/contracts.js'

import {createApp} from '../../src/server/app.js'
import {listen, type Listening} from '../../src/server/listen.js'

describe('app: a client that goes away mid-answer', () => {
  const errors: string[] = []
  const log = {debug() {}, error: (message: string) => errors.push(message), info() {}, warn() {}}
  let listening: Listening

  const endless: RouteDefinition = {
    async handler() {
      async function* ticks() {
        for (let n = 0; ; n++) {
          yield {n}
          await delay(10)
        }
      }

      return {events: ticks(), kind: 'sse'}
    },
    method: 'GET',
    path: '/ticks',
    permission: 'models:read',
    summary: 'ticks',
  }
  const bytes: RouteDefinition = {
    async handler() {
      async function* chunks() {
        for (;;) {
          yield new Uint8Array(64 * 1024)
          await delay(10)
        }
      }

      return {body: chunks(), contentType: 'application/octet-stream', kind: 'bytes'}
    },
    method: 'GET',
    path: '/bytes',
    permission: 'models:read',
    summary: 'bytes',
  }

  before(async () => {
    const routes = [endless, bytes].map((definition) => ({definition, plugin: 'test'}))
    listening = await listen(createApp({log, models: {get: () => expect.fail('no models here'), list: () => []}, routes, version: '0.0.0'}), {host: '127.0.0.1', port: 0})
  })

  after(async () => listening?.close())

  for (const path of ['/ticks', '/bytes'])
    it(`logs nothing and prints nothing when the client of ${path} leaves after its first bytes`, async () => {
      const printed: unknown[] = []
      const consoleError = console.error
      console.error = (...args: unknown[]) => printed.push(args)
      try {
        await new Promise<void>((resolve, reject) => {
          const leaving = request(`${listening.url}${path}`, (response) => {
            response.once('data', () => {
              leaving.destroy()
              resolve()
            })
          })
          leaving.on('error', (error) => (error.message === 'socket hang up' ? undefined : reject(error)))
          leaving.end()
        })
        await delay(300)
      } finally {
        console.error = consoleError
      }

      expect(errors).to.deep.equal([])
      expect(printed).to.deep.equal([])
    })
})
