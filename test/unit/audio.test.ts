/**
 * The audio plugins' pure parts: how long audio is cut into Whisper windows, the transcript's response formats,
 * the ggml file the random Whisper recipe writes, and the audio family checks.
 */
import {expect} from 'chai'
import {open} from 'node:fs/promises'
import {join} from 'node:path'

import type {KernelApi, ModelFamily} from '../../src/kernel/contracts.js'

import {windowsOf} from '../../plugins/engine-whisper-cpp/src/chunks.js'
import {TINY_RANDOM_WHISPER, writeRandomWhisperGgml} from '../../plugins/engine-whisper-cpp/src/ggml/random-whisper.js'
import {validateAudioFamily} from '../../plugins/model-audio/src/family.js'
import {renderTranscript, type Transcript} from '../../plugins/model-audio/src/transcript-formats.js'
import {badRequest} from '../../src/kernel/errors.js'
import {temporaryDirectory} from '../helpers/service.js'

const RATE = 16_000

describe('audio: Whisper windows', () => {
  it('keeps audio of 30 s or less whole', () => {
    expect(windowsOf(new Int16Array(30 * RATE), RATE)).to.deep.equal([[0, 30 * RATE]])
    expect(windowsOf(new Int16Array(RATE), RATE)).to.deep.equal([[0, RATE]])
  })

  it('cuts longer audio at the quietest moment of each window\'s last 5 s, covering every sample once', () => {
    const samples = new Int16Array(70 * RATE).fill(1000)
    // Silence at 27.5 s: the first cut lands there rather than at 30 s.
    samples.fill(0, Math.round(27.5 * RATE), Math.round(27.52 * RATE))
    const windows = windowsOf(samples, RATE)
    expect(windows[0][1] / RATE).to.be.closeTo(27.51, 0.01)
    expect(windows[0][0]).to.equal(0)
    for (let i = 1; i < windows.length; i++) expect(windows[i][0]).to.equal(windows[i - 1][1])
    expect(windows.at(-1)![1]).to.equal(samples.length)
    for (const [start, end] of windows) expect(end - start).to.be.at.most(30 * RATE)
  })
})

describe('audio: transcript formats', () => {
  const transcript: Transcript = {
    duration: 3725.5,
    language: 'de',
    segments: [
      {end: 1.5, start: 0, text: ' Guten Tag.'},
      {end: 3725.25, start: 3723.004, text: ' Auf Wiedersehen.'},
    ],
    words: [{end: 0.6, start: 0, word: 'Guten'}],
  }
  const render = (format: 'json' | 'text' | 'srt' | 'vtt' | 'verbose_json', granularities: Array<'segment' | 'word'> = ['segment']) =>
    renderTranscript(transcript, {format, granularities: new Set(granularities), task: 'transcribe', temperature: 0})

  it('writes SubRip and WebVTT with hours, commas and dots as each format has them', () => {
    expect(render('srt')).to.deep.equal({body: '1\n00:00:00,000 --> 00:00:01,500\nGuten Tag.\n\n2\n01:02:03,004 --> 01:02:05,250\nAuf Wiedersehen.\n', contentType: 'application/x-subrip; charset=utf-8'})
    expect(render('vtt').body).to.equal('WEBVTT\n\n00:00:00.000 --> 00:00:01.500\nGuten Tag.\n\n01:02:03.004 --> 01:02:05.250\nAuf Wiedersehen.\n')
    expect(render('text').body).to.equal('Guten Tag. Auf Wiedersehen.\n')
    expect(render('json').body).to.deep.equal({text: 'Guten Tag. Auf Wiedersehen.', usage: {seconds: 3726, type: 'duration'}})
  })

  it('lists in verbose_json only the granularities asked for, with the language\'s name', () => {
    const words = render('verbose_json', ['word']).body as Record<string, unknown>
    expect(words).to.include({language: 'german', task: 'transcribe'})
    expect(words).to.have.property('words').that.deep.equals(transcript.words)
    expect(words).to.not.have.property('segments')
    const segments = render('verbose_json').body as {segments: Array<Record<string, unknown>>}
    expect(segments).to.not.have.property('words')
    expect(segments.segments[1]).to.include({end: 3725.25, id: 1, start: 3723.004, text: ' Auf Wiedersehen.'})
  })

  it('names english as a translation\'s language, whatever was spoken', () => {
    const translated = renderTranscript(transcript, {format: 'verbose_json', granularities: new Set(['segment']), task: 'translate', temperature: 0}).body
    expect(translated).to.include({language: 'english', task: 'translate'})
  })
})

describe('audio: the random Whisper ggml file', () => {
  it('starts with the ggml magic and the hyper-parameters whisper.cpp reads, in its order', async () => {
    const path = join(await temporaryDirectory(), 'ggml-random.bin')
    await writeRandomWhisperGgml(path)
    const file = await open(path)
    const {buffer} = await file.read(Buffer.alloc(4 * 14), 0, 4 * 14, 0)
    await file.close()
    const ints = Array.from({length: 14}, (_, i) => buffer.readInt32LE(i * 4))
    const {audioContext, audioLayers, heads, state, textContext, textLayers} = TINY_RANDOM_WHISPER
    expect(buffer.readUInt32LE(0)).to.equal(0x67_67_6d_6c)
    expect(ints.slice(1)).to.deep.equal([51_865, audioContext, state, heads, audioLayers, textContext, state, heads, textLayers, 80, 0, 80, 201])
  })
})

describe('audio: family checks', () => {
  const api = {errors: {badRequest}} as unknown as KernelApi
  const refusal = (family: Partial<ModelFamily>) => {
    try {
      validateAudioFamily(api, {model_name: 'x', ...family})
      return undefined
    } catch (error) {
      return (error as {param?: string}).param
    }
  }

  it('accepts Xinference\'s audio fields and names the field of a wrong one', () => {
    expect(refusal({default_transcription_config: {language: 'en'}, language: ['en'], model_ability: ['audio2text', 'text2audio'], model_family: 'whisper', multilingual: true, voices: ['default']})).to.equal(undefined)
    expect(refusal({model_ability: ['chat']})).to.equal('model_ability')
    expect(refusal({model_ability: []})).to.equal('model_ability')
    expect(refusal({multilingual: 'yes'})).to.equal('multilingual')
    expect(refusal({language: 'en'})).to.equal('language')
    expect(refusal({voices: []})).to.equal('voices')
    expect(refusal({default_transcription_config: 'en'})).to.equal('default_transcription_config')
    expect(refusal({default_transcription_config: {language: 'zz'}})).to.equal('default_transcription_config')
    expect(refusal({model_family: ''})).to.equal('model_family')
  })
})
