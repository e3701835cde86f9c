/**
 * The speech route with a stand-in engine and FFmpeg itself: a missing FFmpeg is an error before any response head,
 * and a client that stops reading ends the engine's stream at once. The engine never finishes on its own here, so a
 * route that waited for its next chunk, or for the request's abort (never given), would hang the test.
 */
import {expect} from 'chai'
import {setTimeout as delay} from 'node:timers/promises'

import type {KernelApi, ModelDirectory, RouteRequest} from '../../src/kernel/contracts.js'

import {speechRoute} from '../../plugins/model-audio/src/speech.js'
import {createKernelApi} from '../../src/kernel/kernel.js'
import {until} from '../helpers/service.js'

const quiet = {debug() {}, error() {}, info() {}, warn() {}}
const api: KernelApi = createKernelApi('0.0.0', quiet)
const RATE = 16_000

/** A text2audio model that sends its format and two seconds of PCM, then waits for its signal; `closed` once its stream is. */
function waitingEngine() {
  const engine = {aborted: false, closed: false}
  const models = {
    get: () => ({
      abilities: ['text2audio'],
      description: {},
      async *invoke(_operation: string, _payload: unknown, signal: AbortSignal) {
        try {
          yield {sampleRate: RATE, type: 'format'}
          yield {pcm: Buffer.alloc(2 * RATE * 2).toString('base64'), type: 'audio'}
          await new Promise((resolve) => signal.addEventListener('abort', resolve, {once: true}))
          engine.aborted = true
        } finally {
          engine.closed = true
        }
      },
      modelName: 'stand-in',
      modelType: 'audio',
      uid: 'voice',
    }),
    list: () => [],
  } as unknown as ModelDirectory
  return {engine, models}
}

const request = (models: ModelDirectory, responseFormat: string) =>
  ({body: {input: 'Hello.', model: 'voice', response_format: responseFormat, voice: 'default'}, models, signal: new AbortController().signal}) as unknown as RouteRequest<never>

describe('audio: the speech route\'s input', () => {
  const refusal = (input: unknown) => {
    try {
      speechRoute(api).body!.parse({input, model: 'voice', voice: 'default'})
    } catch (error) {
      return error as {message: string; param?: string; status?: number}
    }
  }

  it('counts characters as OpenAI does, an emoji as one', () => {
    expect(refusal('😀'.repeat(4096))).to.equal(undefined)
    expect(refusal('😀'.repeat(4097))).to.include({param: 'input', status: 400})
    expect(refusal('😀'.repeat(4097))!.message).to.match(/^`input` must be at most 4096 characters long/)
    expect(refusal('a'.repeat(4097))).to.include({param: 'input', status: 400})
  })

  it('refuses text of only whitespace, which would be spoken as silence', () => {
    for (const input of [' ', '\n\t ', '\u3000']) {
      expect(refusal(input), JSON.stringify(input)).to.include({param: 'input', status: 400})
      expect(refusal(input)!.message).to.match(/`input` has nothing to speak/)
    }

    expect(refusal(' Hello. ')).to.equal(undefined)
  })
})

describe("audio: the speech route and Xinference's clients", () => {
  it('takes voice "", stream and kwargs "{}" as speech() sends them, speaking with the model\'s default voice', async () => {
    const sent = speechRoute(api).body!.parse({input: 'Hello.', kwargs: '{}', model: 'voice', response_format: 'pcm', speed: 1, stream: false, voice: ''})
    let asked: {voice?: string} = {}
    const {models} = waitingEngine()
    const listening = {...models, get: (uid: string) => ({...models.get(uid), invoke: (operation: string, payload: {voice: string}, signal: AbortSignal) => ((asked = payload), models.get(uid).invoke(operation, payload, signal))})}
    const result = await speechRoute(api).handler({body: sent, models: listening, signal: new AbortController().signal} as unknown as RouteRequest<never>)
    expect(asked.voice).to.equal('default')
    if (result.kind === 'bytes') await result.body[Symbol.asyncIterator]().return?.()
    expect(() => speechRoute(api).body!.parse({input: 'Hello.', kwargs: '{"prompt_text": "x"}', model: 'voice', voice: ''})).to.throw('`kwargs.prompt_text` is not taken')
  })
})

describe('audio: the speech route and FFmpeg', function () {
  this.timeout(20_000)

  it('refuses before answering when FFmpeg is missing, naming response_format and what to do, and closes the engine\'s stream', async () => {
    const {engine, models} = waitingEngine()
    const route = speechRoute(api, {ffmpeg: '/nonexistent/ffmpeg'})
    const refusal = await route.handler(request(models, 'mp3')).then(
      () => undefined,
      (error: {code?: string; message: string; param?: string; status?: number}) => error,
    )
    expect(refusal, 'the route answered 200 with a body FFmpeg cannot make').to.not.equal(undefined)
    expect(refusal).to.include({code: 'internal_error', status: 500})
    expect(refusal!.message).to.contain('`response_format` mp3').and.contain('FFmpeg').and.contain('apt install ffmpeg')
    expect(engine.closed).to.equal(true)
  })

  it('ends FFmpeg and the engine\'s stream as soon as the client stops reading, without the request\'s abort', async () => {
    const {engine, models} = waitingEngine()
    const result = await speechRoute(api).handler(request(models, 'pcm'))
    if (result.kind !== 'bytes') throw new Error(`a ${result.kind} answer`)
    const audio = result.body[Symbol.asyncIterator]()
    const first = await audio.next()
    expect(first.done).to.equal(false)
    // As the HTTP app does when the client goes away, while the next chunk is still awaited.
    const pending = audio.next().catch(() => {})
    await Promise.race([audio.return!(), delay(5000)])
    expect(await until(async () => engine.closed || undefined, "the engine's stream to close", 5000)).to.equal(true)
    expect(engine.aborted).to.equal(true)
    await Promise.race([pending, delay(5000)])
  })
})
