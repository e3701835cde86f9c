/**
 * Query parameters a route declares are checked before its handler runs, as /openapi.json describes them: required,
 * yes/no, numbers and enums, each refusal a 400 naming the parameter; undeclared parameters pass untouched.
 */
import {expect} from 'chai'

import type {RouteDefinition, RouteRequest} from '../../src/kernel/contracts.js'

import {createApp} from '../../src/server/app.js'
import {listen, type Listening} from '../../src/server/listen.js'

const quiet = {debug() {}, error() {}, info() {}, warn() {}}

describe('declared query parameters', () => {
  const handled: Array<RouteRequest['query']> = []
  let listening: Listening

  const route: RouteDefinition = {
    async handler({query}) {
      handled.push(query)
      return {body: {ok: true}, kind: 'json'}
    },
    method: 'GET',
    path: '/things',
    permission: 'public',
    query: {
      detailed: {description: 'yes or no', schema: {type: 'boolean'}},
      limit: {description: 'how many', schema: {type: 'integer'}},
      name: {description: 'which', required: true, schema: {type: 'string'}},
      order: {description: 'how', schema: {enum: ['asc', 'desc'], type: 'string'}},
      ratio: {description: 'how much', schema: {type: 'number'}},
    },
    summary: 'things',
  }

  before(async () => {
    listening = await listen(createApp({log: quiet, models: {get: () => expect.fail('no models here'), list: () => []}, routes: [{definition: route, plugin: 'test'}], version: '0.0.0'}), {host: '127.0.0.1', port: 0})
  })

  after(async () => listening?.close())

  const get = async (query: string) => {
    const response = await fetch(`${listening.url}/things?${query}`)
    return {body: await response.json(), status: response.status}
  }

  it('passes declared parameters of the right kind, and ones it does not declare, to the handler', async () => {
    expect(await get('name=a&detailed=true&limit=-3&ratio=0.5&order=desc&_=123')).to.deep.equal({body: {ok: true}, status: 200})
    expect(await get('name=a&detailed=0')).to.deep.equal({body: {ok: true}, status: 200})
    expect(handled.at(-2)).to.deep.equal({_: '123', detailed: 'true', limit: '-3', name: 'a', order: 'desc', ratio: '0.5'})
  })

  it('refuses a missing required parameter, a wrong yes/no, number or choice, and a repeated one, each with a 400 naming it', async () => {
    const cases: Array<[string, string, RegExp]> = [
      ['', 'name', /^query parameter `name` is required\.$/],
      ['name=', 'name', /is required/],
      ['name=a&detailed=yes', 'detailed', /must be true or false \(got "yes"\)/],
      ['name=a&detailed=', 'detailed', /must be true or false \(got ""\)/],
      ['name=a&limit=2.5', 'limit', /must be an integer/],
      ['name=a&ratio=lots', 'ratio', /must be a number/],
      ['name=a&order=up', 'order', /must be one of asc, desc/],
      ['name=a&name=b', 'name', /must be given once/],
    ]
    const before = handled.length
    for (const [query, param, message] of cases) {
      const {body, status} = await get(query)
      expect(status, query).to.equal(400)
      expect(body.error.param, query).to.equal(param)
      expect(body.error.message, query).to.match(message)
    }

    expect(handled.length).to.equal(before)
  })
})
