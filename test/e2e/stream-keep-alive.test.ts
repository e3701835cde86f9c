/**
 * A streamed answer tells the client how long the service keeps its connection open (`Keep-Alive: timeout=…`), as
 * Node does for every other answer. Without it, fetch (undici) closes a connection after 4 idle seconds; under load,
 * the requests of the next burst that need a new connection then reach the service after those sent later on kept
 * ones, and wait a whole round of n_parallel more (the llama-server bench measured 59 of 64 served out of order).
 */
import {expect} from 'chai'

import {serveTinyChatModel} from '../helpers/models.js'
import type {RunningService} from '../helpers/service.js'

describe('streamed answers keep their connection (service-local, llama.cpp engine, fetch)', () => {
  let service: RunningService

  before(async () => {
    ;({service} = await serveTinyChatModel('keep-alive-chat', {n_parallel: 2}))
  })

  after(async () => {
    await service?.stop()
  })

  it('announces the keep-alive timeout on a streamed chat completion, like on a plain answer', async () => {
    const plain = await fetch(`${service.url}/v1/models`)
    await plain.text()
    const streamed = await fetch(`${service.url}/v1/chat/completions`, {
      body: JSON.stringify({max_tokens: 4, messages: [{content: 'Hello', role: 'user'}], model: 'keep-alive-chat', stream: true}),
      headers: {'content-type': 'application/json'},
      method: 'POST',
    })
    expect(streamed.headers.get('content-type')).to.match(/^text\/event-stream/)
    expect(await streamed.text()).to.match(/data: \[DONE\]/)
    expect(plain.headers.get('keep-alive')).to.match(/^timeout=\d+$/)
    expect(streamed.headers.get('keep-alive')).to.equal(plain.headers.get('keep-alive'))
  })
})
