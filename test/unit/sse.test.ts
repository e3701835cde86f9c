import {expect} from 'chai'

import {ServiceError} from '../../src/kernel/errors.js'
import {toServerSentEvents} from '../../src/server/sse.js'

const nextTurn = () => new Promise((resolve) => setImmediate(resolve))
/** When events come from I/O (the model process's IPC messages), as they do in the service. */
const later = () => new Promise((resolve) => setTimeout(resolve, 5))

async function chunksOf(stream: NodeJS.ReadableStream): Promise<string[]> {
  const chunks: string[] = []
  for await (const chunk of stream) chunks.push(String(chunk))
  return chunks
}

describe('server-sent events', () => {
  it('writes the events ready in one turn as one chunk, and events of later turns as their own', async () => {
    async function* events() {
      yield {n: 1}
      yield {n: 2}
      await later()
      yield {n: 3}
    }

    expect(await chunksOf(toServerSentEvents(events(), {terminator: '[DONE]'}))).to.deep.equal([
      'data: {"n":1}\n\ndata: {"n":2}\n\n',
      'data: {"n":3}\n\ndata: [DONE]\n\n',
    ])
  })

  it('ends a failed stream with an error event in the route family\'s shape, after the events before it', async () => {
    async function* events() {
      yield {n: 1}
      await nextTurn()
      throw new ServiceError(503, 'model_crashed', 'the model crashed')
    }

    const chunks = await chunksOf(toServerSentEvents(events(), {errorEvent: (error) => ({event: 'error', data: {message: error.message}})}))
    expect(chunks.join('')).to.equal('data: {"n":1}\n\nevent: error\ndata: {"message":"the model crashed"}\n\n')
  })

  it('ends a chunk with its turn even when events keep coming every turn', async () => {
    async function* events() {
      for (let n = 0; n < 50; n++) {
        yield {n}
        await nextTurn()
      }
    }

    const chunks = await chunksOf(toServerSentEvents(events(), {}))
    expect(chunks.length).to.be.greaterThan(10)
    expect(chunks.join('')).to.equal(Array.from({length: 50}, (_, n) => `data: {"n":${n}}\n\n`).join(''))
  })

  it('stops the events when the stream is destroyed (the client went away)', async () => {
    let stopped = false
    async function* events() {
      try {
        for (let n = 0; ; n++) {
          yield {n}
          await nextTurn()
        }
      } finally {
        stopped = true
      }
    }

    const stream = toServerSentEvents(events(), {})
    for await (const _chunk of stream) break
    await later()
    expect(stopped).to.equal(true)
  })
})
