/**
 * The whisper.cpp engine's host with the real @fugood/whisper.node binding and a random Whisper in ggml format: a
 * transcription whose client goes away settles at once (whisper.node's own promise never does once stopped), and
 * the model's only context serves the next request.
 */
import type {AudioOperations, LoadedModel, LoadRequest, TranscriptionEvent} from '../../src/index.js'

import {expect} from 'chai'
import {join} from 'node:path'

import host from '../../plugins/engine-whisper-cpp/src/host.js'
import {writeRandomWhisperGgml} from '../../plugins/engine-whisper-cpp/src/ggml/random-whisper.js'
import {errorFactory} from '../../src/kernel/errors.js'
import {temporaryDirectory} from '../helpers/service.js'

const SAMPLE_RATE = 16_000
const silentLog = {debug() {}, error() {}, info() {}, warn() {}}

/** `seconds` of a quiet 440 Hz tone, as the route hands PCM to the engine. */
function pcm(seconds: number): string {
  const samples = Int16Array.from({length: seconds * SAMPLE_RATE}, (_, i) => Math.round(2000 * Math.sin((2 * Math.PI * 440 * i) / SAMPLE_RATE)))
  return Buffer.from(samples.buffer).toString('base64')
}

async function drain(events: AsyncIterable<TranscriptionEvent>): Promise<TranscriptionEvent[]> {
  const all: TranscriptionEvent[] = []
  for await (const event of events) all.push(event)
  return all
}

describe('whisper.cpp host (real binding)', function () {
  this.timeout(120_000)
  let model: LoadedModel<Pick<AudioOperations, 'transcribe'>>

  before(async () => {
    const modelPath = join(await temporaryDirectory(), 'ggml-random.bin')
    await writeRandomWhisperGgml(modelPath)
    const request = {family: {}, modelName: 'random-whisper', modelPath, modelType: 'audio', modelUid: 'random-whisper', parameters: {n_parallel: 1, n_threads: 1, use_gpu: false}} as unknown as LoadRequest
    model = await host.load(request, {errors: errorFactory, log: silentLog as never, signal: new AbortController().signal})
  })

  after(async () => model?.dispose?.())

  it('settles a transcription stopped mid-window with the abort, and the only context then serves the next request', async () => {
    const abort = new AbortController()
    const events = model.operations.transcribe({pcm: pcm(25), translate: false, words: false}, abort.signal)[Symbol.asyncIterator]()
    const first = events.next()
    // The job is queued on the binding's thread pool by the time this runs; stopping it there is what never settled.
    setImmediate(() => abort.abort(new Error('the client went away')))
    const outcome = await first.then(
      () => 'settled with a result',
      (error: Error) => error.message,
    )
    expect(outcome).to.equal('the client went away')

    const next = await drain(model.operations.transcribe({language: 'en', pcm: pcm(2), translate: false, words: false}, new AbortController().signal))
    expect(next.at(-1)).to.deep.include({duration: 2, type: 'done'})
  })
})
