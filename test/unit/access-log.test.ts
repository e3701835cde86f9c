/**
 * The access log: one info line per request with its route, status, duration, model and tokens as fields; a
 * cluster's heartbeats and health checks at debug, so an idle cluster's log stays quiet.
 */
import {expect} from 'chai'

import type {LogFields} from '../../src/kernel/contracts.js'

import {logServiceEvents, type RequestFinished, ServiceEvents} from '../../src/kernel/observability.js'

describe('access log', () => {
  const logged: Array<{level: string; message: string; fields?: LogFields}> = []
  const capture = (level: string) => (message: string, fields?: LogFields) => logged.push({fields, level, message})
  const events = new ServiceEvents()
  logServiceEvents(events, {debug: capture('debug'), error: capture('error'), info: capture('info'), warn: capture('warn')})
  const request = (route: string, extra: Partial<RequestFinished> = {}): RequestFinished => ({
    completed: true,
    durationMs: 12.345,
    method: 'POST',
    path: route,
    requestId: 'abc-123',
    route,
    status: 200,
    streamed: false,
    ...extra,
  })

  beforeEach(() => logged.splice(0))

  it('writes one info line per request, with what it ran and how it went', () => {
    events.report('request', request('/v1/chat/completions', {completionTokens: 3, modelUid: 'tiny', promptTokens: 5, ttftMs: 4.56}))
    expect(logged).to.deep.equal([
      {
        fields: {completion_tokens: 3, duration_ms: 12.3, model: 'tiny', prompt_tokens: 5, request_id: 'abc-123', route: '/v1/chat/completions', status: 200, ttft_ms: 4.6},
        level: 'info',
        message: 'POST /v1/chat/completions',
      },
    ])
  })

  it('says when the client went away, and keeps heartbeats and health checks at debug', () => {
    events.report('request', request('/v1/models', {completed: false, status: 499}))
    events.report('request', request('/v1/cluster/workers/heartbeat'))
    events.report('request', request('/v1/worker/health'))
    expect(logged.map(({level, message}) => `${level} ${message}`)).to.deep.equal([
      'info POST /v1/models (client went away)',
      'debug POST /v1/cluster/workers/heartbeat',
      'debug POST /v1/worker/health',
    ])
  })
})
