/**
 * The OpenAPI document from route definitions alone: what each declaration becomes (parameters, media types, the
 * events' schema, the error shape, security by permission, operation ids).
 */
import {expect} from 'chai'

import type {RouteDefinition} from '../../src/kernel/contracts.js'

import * as s from '../../src/kernel/schema.js'
import {openApiDocument} from '../../src/server/openapi.js'

const handler = async () => ({body: null, kind: 'json' as const})
const route = (definition: Partial<RouteDefinition> & Pick<RouteDefinition, 'method' | 'path'>): {definition: RouteDefinition; plugin: string} => ({
  definition: {handler, summary: 'a route', ...definition},
  plugin: 'test-plugin',
})

describe('openApiDocument', () => {
  const document = openApiDocument(
    [
      route({method: 'GET', path: '/health', permission: 'public', response: {type: 'object'}}),
      route({
        example: {params: {thing_id: 'thing-1'}, query: {detailed: true}},
        method: 'GET',
        path: '/v1/things/:thing_id/parts',
        permission: 'models:list',
        query: {detailed: {description: 'More.', schema: {type: 'boolean'}}, part: {description: 'One part.', required: true, schema: {type: 'string'}}},
        tag: 'things',
      }),
      route({
        body: s.object({model: s.string()}),
        events: s.object({text: s.string()}).json,
        example: {body: {model: 'tiny-random-llm'}},
        method: 'POST',
        path: '/v1/things',
        permission: 'models:read',
        response: {type: 'object'},
      }),
      route({method: 'POST', path: '/v1/cluster/things', permission: 'cluster'}),
      route({errorStyle: 'anthropic', method: 'GET', path: '/anthropic/v1/things', permission: 'models:list'}),
      route({method: 'GET', path: '/metrics', permission: 'metrics:read', produces: 'text/plain', response: {type: 'string'}}),
      route({method: 'DELETE', path: '/v1/things/:thing_id'}),
    ],
    '1.2.3',
  )
  const operation = (path: string, method: string) => (document.paths[path] as Record<string, any>)[method]

  it('gives every operation a unique id made of its method and path', () => {
    const ids = Object.values(document.paths).flatMap((methods) => Object.values(methods).map((op) => (op as {operationId: string}).operationId))
    expect(new Set(ids).size).to.equal(ids.length)
    expect(operation('/v1/things/{thing_id}/parts', 'get').operationId).to.equal('getV1ThingsByThingIdParts')
    expect(operation('/v1/things/{thing_id}', 'delete').operationId).to.equal('deleteV1ThingsByThingId')
  })

  it('lists path parameters as required and the declared query parameters with theirs', () => {
    expect(operation('/v1/things/{thing_id}/parts', 'get').parameters).to.deep.equal([
      {description: undefined, example: 'thing-1', in: 'path', name: 'thing_id', required: true, schema: {type: 'string'}},
      {description: 'More.', example: true, in: 'query', name: 'detailed', required: false, schema: {type: 'boolean'}},
      {description: 'One part.', example: undefined, in: 'query', name: 'part', required: true, schema: {type: 'string'}},
    ])
    expect(operation('/health', 'get').parameters).to.equal(undefined)
  })

  it("gives the route's example body as its media type's example, what /docs' Try it out sends", () => {
    expect(operation('/v1/things', 'post').requestBody.content['application/json']).to.deep.include({example: {model: 'tiny-random-llm'}})
  })

  it('answers JSON, the declared media type, or with events also a text/event-stream whose x-itemSchema is theirs', () => {
    expect(Object.keys(operation('/health', 'get').responses[200].content)).to.deep.equal(['application/json'])
    expect(operation('/metrics', 'get').responses[200].content).to.deep.equal({'text/plain': {schema: {type: 'string'}}})
    const streamed = operation('/v1/things', 'post').responses[200].content
    expect(Object.keys(streamed)).to.deep.equal(['application/json', 'text/event-stream'])
    expect(streamed['text/event-stream']['x-itemSchema'].properties.text.type).to.equal('string')
  })

  it("refers errors to OpenAI's envelope, and to Anthropic's shape on Anthropic routes", () => {
    expect(operation('/v1/things', 'post').responses.default).to.deep.equal({$ref: '#/components/responses/Error'})
    expect(operation('/anthropic/v1/things', 'get').responses.default).to.deep.equal({$ref: '#/components/responses/AnthropicError'})
    expect(document.components.responses.Error.content['application/json'].schema.required).to.deep.equal(['error'])
    expect(document.components.responses.AnthropicError.content['application/json'].schema.required).to.deep.equal(['error', 'type'])
  })

  it('asks for credentials where access control would: none on public routes, the cluster token on cluster routes, x-api-key under /anthropic', () => {
    expect(operation('/health', 'get').security).to.equal(undefined)
    expect(operation('/v1/things', 'post').security).to.deep.equal([{bearer: []}, {login: []}])
    expect(operation('/v1/cluster/things', 'post').security).to.deep.equal([{bearer: []}])
    expect(operation('/anthropic/v1/things', 'get').security).to.deep.equal([{apiKey: []}, {bearer: []}, {login: []}])
    expect(operation('/v1/things/{thing_id}', 'delete')['x-permission']).to.equal('admin')
    expect(Object.keys(document.components.securitySchemes)).to.have.members(['apiKey', 'bearer', 'login'])
  })

  it('tags each operation with its tag or plugin, and lists the tags', () => {
    expect(operation('/v1/things/{thing_id}/parts', 'get').tags).to.deep.equal(['things'])
    expect(operation('/health', 'get').tags).to.deep.equal(['test-plugin'])
    expect(document.tags).to.deep.equal([{name: 'test-plugin'}, {name: 'things'}])
  })
})
