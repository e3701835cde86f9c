/**
 * In a cluster the supervisor reaches a model through its worker over HTTP: a call made for a request carries the
 * request's id, so the worker (whose app enters it as the request's context) and its model log lines carry it too.
 */
import {expect} from 'chai'

import {RemoteWorker} from '../../src/cluster/remote-worker.js'
import {withRequestId} from '../../src/kernel/request-context.js'

describe('remote worker calls and request ids', () => {
  it("sends the id of the request a call is made for as X-Request-Id, and none for a call outside any request", async () => {
    const sent: Array<string | null> = []
    const worker = new RemoteWorker({
      address: 'http://worker.test:1',
      async fetch(_url, init) {
        sent.push(new Headers(init?.headers).get('x-request-id'))
        return new Response('null', {headers: {'content-type': 'application/json'}})
      },
      instances: [],
      resources: {cpu_count: 1, gpus: [], memory_free_bytes: 1, memory_total_bytes: 1},
      version: '0.0.0',
    })
    await withRequestId('abc-123', () => worker.terminate('tiny'))
    await worker.terminate('tiny')
    expect(sent).to.deep.equal(['abc-123', null])
  })
})
