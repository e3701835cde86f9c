/**
 * The kernel's reader of JSON-lines programs (src/kernel/json-lines-program.ts), its program's answer given chunk by
 * chunk exactly as the test cuts it (fetch is stubbed): a long line split across many chunks, several lines in one
 * chunk, a line whose end and the next line's start share a chunk, a multi-byte UTF-8 character split between chunks,
 * and blank lines, all come out whole and in order; an error line after a result fails the call with its message.
 */
import {expect} from 'chai'

import type {ExternalEndpoint} from '../../src/kernel/external-engine.js'

import {jsonLinesProgram} from '../../src/kernel/json-lines-program.js'

const realFetch = globalThis.fetch

/** Has the next fetch answer 200 with `chunks` as its body, each a read of its own. */
function answerWith(chunks: Uint8Array[]) {
  globalThis.fetch = async () => {
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        const chunk = chunks.shift()
        if (chunk) controller.enqueue(chunk)
        else controller.close()
      },
    })
    return new Response(body, {headers: {'content-type': 'application/x-ndjson'}, status: 200})
  }
}

/** `bytes` cut every `size` bytes. */
function cut(bytes: Uint8Array, size: number): Uint8Array[] {
  const chunks = []
  for (let start = 0; start < bytes.length; start += size) chunks.push(bytes.subarray(start, start + size))
  return chunks
}

const endpoint = {baseUrl: 'http://127.0.0.1:1', signal: new AbortController().signal} as ExternalEndpoint

async function events(): Promise<unknown[]> {
  const read = []
  for await (const event of jsonLinesProgram('test')('/generate', {}, endpoint)) read.push(event)
  return read
}

describe('jsonLinesProgram: the lines of a program answering in JSON lines', () => {
  afterEach(() => {
    globalThis.fetch = realFetch
  })

  it('reads a line split across many chunks, and several lines in one chunk, whole and in order', async () => {
    const video = 'A'.repeat(200_000)
    const text = `{"type": "progress", "step": 1}\n{"type": "progress", "step": 2}\n\n{"type": "result", "b64_json": "${video}"}\n{"type": "done"}\n`
    answerWith(cut(new TextEncoder().encode(text), 997))
    expect(await events()).to.deep.equal([
      {step: 1, type: 'progress'},
      {step: 2, type: 'progress'},
      {b64_json: video, type: 'result'},
      {type: 'done'},
    ])
  })

  it('reads lines given all in one chunk, and lines given a byte a chunk, multi-byte characters split between chunks', async () => {
    const text = '{"prompt": "héllo ✓ 🌊"}\n{"n": 2}\n'
    answerWith([new TextEncoder().encode(text)])
    expect(await events()).to.deep.equal([{prompt: 'héllo ✓ 🌊'}, {n: 2}])
    answerWith(cut(new TextEncoder().encode(text), 1))
    expect(await events()).to.deep.equal([{prompt: 'héllo ✓ 🌊'}, {n: 2}])
  })

  it('reads a chunk that ends one line and starts the next', async () => {
    answerWith(['{"a": ', '1}\n{"b"', ': 2}\n{"c": 3', '}\n'].map((piece) => new TextEncoder().encode(piece)))
    expect(await events()).to.deep.equal([{a: 1}, {b: 2}, {c: 3}])
  })

  it('fails the call with the message of an error line that follows a result', async () => {
    answerWith([new TextEncoder().encode('{"type": "result", "n": 1}\n{"type": "error", "status": 500, "message": "out of memory"}\n')])
    const read: unknown[] = []
    const failure = await (async () => {
      for await (const event of jsonLinesProgram('test')('/generate', {}, endpoint)) read.push(event)
    })().then(
      () => undefined,
      (error: Error) => error,
    )
    expect(read).to.deep.equal([{n: 1, type: 'result'}])
    expect(failure?.message).to.equal('the test program failed: out of memory')
  })
})
