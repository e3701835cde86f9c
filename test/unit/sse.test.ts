import {expect} from 'chai'

import {readEventData} from '../../src/client/server-sent-events.js'
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

  it('ends a live stream with an error event when `until` is aborted, while the model has nothing to send', async () => {
    const shutdown = new AbortController()
    async function* events() {
      yield {n: 1}
      await new Promise(() => {})
    }

    const stream = toServerSentEvents(events(), {terminator: '[DONE]', until: shutdown.signal})
    const chunks: string[] = []
    for await (const chunk of stream) {
      chunks.push(String(chunk))
      if (chunks.length === 1) shutdown.abort(new ServiceError(503, 'shutting_down', 'the service is shutting down'))
    }

    expect(chunks.join('')).to.equal('data: {"n":1}\n\ndata: {"error":{"code":"shutting_down","message":"the service is shutting down","param":null,"type":"server_error"}}\n\n')
  })
})

describe('server-sent events, as the client reads them', () => {
  /** A response body that arrives in the given pieces. */
  const bodyOf = (...pieces: string[]) =>
    new ReadableStream<Uint8Array>({
      start(controller) {
        for (const piece of pieces) controller.enqueue(new TextEncoder().encode(piece))
        controller.close()
      },
    })
  const read = async (body: ReadableStream<Uint8Array>) => {
    const events: string[] = []
    for await (const data of readEventData(body)) events.push(data)
    return events
  }

  it('reads events whose lines end in CRLF or CR, as well as LF', async () => {
    expect(await read(bodyOf('data: {"n":1}\r\n\r\ndata: {"n":2}\r\r', 'data: [DONE]\n\n'))).to.deep.equal(['{"n":1}', '{"n":2}', '[DONE]'])
  })

  it('strips only the one space after "data:", and joins multi-line data with a line break', async () => {
    expect(await read(bodyOf('data:   indented\n\ndata:no space\n\ndata: first\ndata:  second\n\n'))).to.deep.equal(['  indented', 'no space', 'first\n second'])
  })

  it('reads an event split anywhere across chunks, a multi-byte character included, and skips comments and other fields', async () => {
    const event = ': keep-alive\nevent: message\nid: 7\ndata: {"text":"héllo"}\r\n\r\n'
    const bytes = new TextEncoder().encode(event)
    const split = bytes.indexOf(0xc3) + 1
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(bytes.slice(0, split))
        controller.enqueue(bytes.slice(split))
        controller.close()
      },
    })
    expect(await read(body)).to.deep.equal(['{"text":"héllo"}'])
  })
})
