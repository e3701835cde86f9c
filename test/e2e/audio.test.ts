/**
 * The audio model type end to end on a real `service-local` that cannot reach any hub: `servicectl launch` makes
 * tiny-random-whisper's ggml file, whisper.cpp runs it in a model process of its own, and the official `openai` client
 * transcribes and translates uploads in every container and response format, checked against OpenAI's own
 * description. The text is noise (random weights): the tests check shapes, times and formats, not words.
 */
import {expect} from 'chai'
import {execa} from 'execa'
import {copyFile, mkdir, readdir, readFile, rm, writeFile} from 'node:fs/promises'
import {join} from 'node:path'
import {pathToFileURL} from 'node:url'
import OpenAI, {toFile} from 'openai'

import {writeRandomWhisperGgml} from '../../plugins/engine-whisper-cpp/src/ggml/random-whisper.js'
import {Client, type Transcription} from '../../src/client/index.js'
import {AUDIO_CONTAINERS, writeTestAudio} from '../helpers/audio.js'
import {assertOpenAiSchema} from '../helpers/conformance.js'
import {FakeHub} from '../helpers/fake-hub.js'
import {type OpenApiDocument, OpenApiChecker} from '../helpers/openapi-checker.js'
import {callApi, closedPort, type RunningService, servicectl, startService, temporaryDirectory} from '../helpers/service.js'

const MAX_SECONDS = 12

describe('audio: speech to text with whisper.cpp (service-local, servicectl, openai client)', function () {
  this.timeout(120_000)
  let service: RunningService
  let client: OpenAI
  let directory: string
  let uploads: string
  let speech: string
  const cli = (args: string[]) => servicectl(args, {env: {SERVICE_ENDPOINT: service.url}})
  const upload = async (path: string) => toFile(await readFile(path), path.split('/').at(-1))
  const refusal = async (promise: Promise<unknown>) => {
    const error = (await promise.then(
      () => undefined,
      (caught: unknown) => caught,
    )) as {status?: number; error?: {message?: string; param?: string}} | undefined
    expect(error, 'the request should have been refused').to.not.equal(undefined)
    return {message: error!.error?.message ?? '', param: error!.error?.param, status: error!.status}
  }

  before(async () => {
    directory = await temporaryDirectory()
    uploads = join(directory, 'tmp')
    await mkdir(uploads)
    speech = await writeTestAudio(directory, 'wav', 3)
    const unreachable = `http://127.0.0.1:${await closedPort()}`
    service = await startService({env: {HF_ENDPOINT: unreachable, MODELSCOPE_ENDPOINT: unreachable, SERVICE_AUDIO_MAX_SECONDS: String(MAX_SECONDS), TMPDIR: uploads}})
    client = new OpenAI({apiKey: 'not-needed', baseURL: `${service.url}/v1`, maxRetries: 0})
    const launched = await cli(['launch', '-n', 'tiny-random-whisper', '-t', 'audio', '--model-engine', 'whisper.cpp'])
    expect(launched.exitCode, launched.stderr).to.equal(0)
  })

  after(async () => service?.stop())

  afterEach(async () => {
    // Whatever became of the request, its upload is gone once the response is over.
    // (Node keeps its compile cache there too.)
    expect((await readdir(uploads)).filter((name) => name !== 'node-compile-cache')).to.deep.equal([])
  })

  it('lists the Whisper catalogue and the generated tiny-random-whisper', async () => {
    const listed = await cli(['registrations', '-t', 'audio'])
    expect(listed.exitCode, listed.stderr).to.equal(0)
    for (const name of ['whisper-tiny', 'whisper-large-v3', 'whisper-large-v3-turbo', 'tiny-random-whisper']) expect(listed.stdout).to.contain(name)
  })

  it('transcribes a wav upload into OpenAI\'s json shape', async () => {
    const result = await client.audio.transcriptions.create({file: await upload(speech), model: 'tiny-random-whisper', temperature: 0})
    assertOpenAiSchema('CreateTranscriptionResponseJson', result)
    // The openai client writes 0.0000001 as 1e-7.
    const tiny = await client.audio.transcriptions.create({file: await upload(speech), model: 'tiny-random-whisper', temperature: 0.0000001})
    expect(tiny.text).to.be.a('string')
    expect(result.text).to.be.a('string')
    expect((result as unknown as {usage: {seconds: number}}).usage).to.deep.equal({seconds: 3, type: 'duration'})
  })

  it('gives verbose_json with segments and words inside the audio\'s duration', async () => {
    const result = await client.audio.transcriptions.create({
      file: await upload(speech),
      language: 'en',
      model: 'tiny-random-whisper',
      response_format: 'verbose_json',
      timestamp_granularities: ['segment', 'word'],
    })
    assertOpenAiSchema('CreateTranscriptionResponseVerboseJson', result)
    expect(result.language).to.equal('english')
    expect(result.duration).to.be.closeTo(3, 0.05)
    expect(result.segments).to.be.an('array').that.is.not.empty
    for (const segment of result.segments!) {
      assertOpenAiSchema('TranscriptionSegment', segment)
      expect(segment.start).to.be.at.least(0).and.at.most(segment.end)
      expect(segment.end).to.be.at.most(result.duration + 0.05)
    }

    for (const word of result.words!) {
      expect(word.word.trim()).to.equal(word.word).and.not.equal('')
      expect(word.start).to.be.at.most(word.end)
    }

    expect(result.text).to.equal(result.segments!.map((segment) => segment.text).join('').trim())
    // The words are the text's own, not those of another decode.
    const letters = (text: string) => text.replaceAll(/\s/g, '')
    expect(letters(result.words!.map((word) => word.word).join(''))).to.equal(letters(result.text))
  })

  it('answers text, srt and vtt as the subtitle formats are written', async () => {
    const file = await upload(speech)
    const text = await client.audio.transcriptions.create({file, model: 'tiny-random-whisper', response_format: 'text'})
    expect(text).to.be.a('string')
    const srt = (await client.audio.transcriptions.create({file: await upload(speech), model: 'tiny-random-whisper', response_format: 'srt'})) as unknown as string
    expect(srt).to.match(/^1\n\d\d:\d\d:\d\d,\d{3} --> \d\d:\d\d:\d\d,\d{3}\n/)
    const vtt = (await client.audio.transcriptions.create({file: await upload(speech), model: 'tiny-random-whisper', response_format: 'vtt'})) as unknown as string
    expect(vtt).to.match(/^WEBVTT\n\n\d\d:\d\d:\d\d\.\d{3} --> \d\d:\d\d:\d\d\.\d{3}\n/)
  })

  it('translates into OpenAI\'s translation shapes', async () => {
    const result = await client.audio.translations.create({file: await upload(speech), model: 'tiny-random-whisper', response_format: 'verbose_json'})
    assertOpenAiSchema('CreateTranslationResponseVerboseJson', result)
    expect(result).to.include({language: 'english', task: 'translate'})
    const plain = await client.audio.translations.create({file: await upload(speech), model: 'tiny-random-whisper'})
    assertOpenAiSchema('CreateTranslationResponseJson', plain)
  })

  it('decodes every container clients send: wav, mp3, flac, ogg, m4a and webm', async () => {
    for (const container of Object.keys(AUDIO_CONTAINERS)) {
      const path = await writeTestAudio(directory, container, 2)
      const result = await client.audio.transcriptions.create({file: await upload(path), model: 'tiny-random-whisper', response_format: 'verbose_json'})
      // Compressed formats pad a few milliseconds at their ends.
      expect(result.duration, container).to.be.closeTo(2, 0.1)
    }
  })

  it('refuses a file that is not audio, an empty one, a concat list, one too short or over the length limit and an unknown language, naming the field', async () => {
    const notAudio = join(directory, 'notes.mp3')
    await writeFile(notAudio, 'these are meeting notes, not a recording\n'.repeat(20))
    const garbage = await refusal(client.audio.transcriptions.create({file: await upload(notAudio), model: 'tiny-random-whisper'}))
    expect(garbage).to.include({param: 'file', status: 400})
    expect(garbage.message).to.contain('could not be decoded as audio').and.to.contain('wav')

    const empty = join(directory, 'empty.wav')
    await writeFile(empty, '')
    expect(await refusal(client.audio.transcriptions.create({file: await upload(empty), model: 'tiny-random-whisper'}))).to.include({param: 'file', status: 400})

    // 2.5 ms: whisper.cpp cannot tell its language, and its job never settled, holding the model's only context.
    const blip = join(directory, 'blip.wav')
    await execa('ffmpeg', ['-nostdin', '-loglevel', 'error', '-f', 'lavfi', '-i', 'sine=frequency=440:sample_rate=16000', '-t', '0.0025', '-y', blip])
    const tooShort = await refusal(client.audio.transcriptions.create({file: await upload(blip), model: 'tiny-random-whisper'}))
    expect(tooShort).to.deep.equal({message: '`file` is 3 ms of audio; the shortest this service transcribes is 100 ms.', param: 'file', status: 400})

    // A concat list FFmpeg would follow to another file on the service's machine (here one beside the upload, which
    // its safe mode allows) is not audio it reads.
    const beside = join(uploads, 'beside.wav')
    await copyFile(speech, beside)
    const list = join(directory, 'list.wav')
    await writeFile(list, "ffconcat version 1.0\nfile 'beside.wav'\n")
    try {
      expect(await refusal(client.audio.transcriptions.create({file: await upload(list), model: 'tiny-random-whisper'}))).to.include({param: 'file', status: 400})
    } finally {
      await rm(beside)
    }

    const long = await writeTestAudio(directory, 'mp3', MAX_SECONDS + 2)
    const tooLong = await refusal(client.audio.transcriptions.create({file: await upload(long), model: 'tiny-random-whisper'}))
    expect(tooLong).to.include({param: 'file', status: 400})
    expect(tooLong.message).to.contain(`${MAX_SECONDS} s`)

    const language = await refusal(client.audio.transcriptions.create({file: await upload(speech), language: 'xx', model: 'tiny-random-whisper'}))
    expect(language).to.include({param: 'language', status: 400})

    const words = await refusal(client.audio.transcriptions.create({file: await upload(speech), model: 'tiny-random-whisper', timestamp_granularities: ['word']}))
    expect(words).to.include({param: 'timestamp_granularities[]', status: 400})

    const format = await refusal(client.audio.transcriptions.create({file: await upload(speech), model: 'tiny-random-whisper', response_format: 'docx' as never}))
    expect(format).to.include({param: 'response_format', status: 400})

    for (const temperature of [1.5, 'warm']) {
      const refused = await refusal(client.audio.transcriptions.create({file: await upload(speech), model: 'tiny-random-whisper', temperature: temperature as number}))
      expect(refused).to.include({param: 'temperature', status: 400})
      expect(refused.message).to.match(/^`temperature` must be a number between 0 and 1/)
    }

    // The service kept serving.
    expect((await client.audio.transcriptions.create({file: await upload(speech), model: 'tiny-random-whisper'})).text).to.be.a('string')
  })

  it('transcribes with `servicectl transcribe` (subtitles, JSON) and the client library', async () => {
    const srt = await cli(['transcribe', '-u', 'tiny-random-whisper', speech, '--response-format', 'srt'])
    expect(srt.exitCode, srt.stderr).to.equal(0)
    expect(srt.stdout).to.match(/^1\n00:00:\d\d,\d{3} --> 00:00:\d\d,\d{3}\n/)
    const json = await cli(['transcribe', '-u', 'tiny-random-whisper', speech, '--translate', '--json'])
    expect(json.exitCode, json.stderr).to.equal(0)
    expect(JSON.parse(json.stdout)).to.have.property('text').that.is.a('string')
    const missing = await cli(['transcribe', '-u', 'tiny-random-whisper', join(directory, 'nothing.wav')])
    expect(missing.exitCode).to.not.equal(0)
    expect(missing.stderr).to.contain('no such file')

    const model = new Client(service.url).model('tiny-random-whisper')
    const verbose = (await model.transcribe(new Blob([await readFile(speech)]), {fileName: 'speech.wav', response_format: 'verbose_json', timestamp_granularities: ['word']})) as Transcription
    expect(verbose.duration).to.be.closeTo(3, 0.05)
    expect(verbose.words).to.be.an('array')
    expect(verbose).to.not.have.property('segments')
    expect(await model.transcribe(new Blob([await readFile(speech)]), {response_format: 'vtt'})).to.match(/^WEBVTT\n/)
  })

  it('answers the transcription routes as /openapi.json declares them, in each response format', async () => {
    const checker = new OpenApiChecker((await callApi(service, 'GET', '/openapi.json')).body as OpenApiDocument)
    const form = async (fields: Record<string, string>) => {
      const body = new FormData()
      for (const [name, value] of Object.entries(fields)) body.append(name, value)
      body.append('file', new Blob([await readFile(speech)], {type: 'audio/wav'}), 'speech.wav')
      return {form: body}
    }

    for (const format of ['json', 'verbose_json', 'text', 'srt', 'vtt'])
      expect((await checker.call(service, 'POST', '/v1/audio/transcriptions', await form({model: 'tiny-random-whisper', response_format: format}))).status, format).to.equal(200)
    expect((await checker.call(service, 'POST', '/v1/audio/translations', await form({model: 'tiny-random-whisper'}))).status).to.equal(200)
  })

  it('refuses an audio registration whose abilities are not the audio type\'s, and applies a registered default_transcription_config', async () => {
    const weights = join(directory, 'ggml-mine.bin')
    await writeFile(weights, 'registered, not launched')
    const family = {model_ability: ['chat'], model_family: 'whisper', model_name: 'my-whisper', model_specs: [{model_format: 'ggml', model_uri: pathToFileURL(weights).href, quantization: 'f16'}]}
    const refused = await callApi(service, 'POST', '/v1/model_registrations/audio', {model: family, persist: false})
    expect(refused.status).to.equal(400)
    expect(JSON.stringify(refused.body)).to.contain('model_ability')
    await writeRandomWhisperGgml(weights)
    const german = {...family, default_transcription_config: {language: 'de'}, model_ability: ['audio2text'], multilingual: true}
    const accepted = await callApi(service, 'POST', '/v1/model_registrations/audio', {model: german, persist: false})
    expect(accepted.status, JSON.stringify(accepted.body)).to.equal(200)
    const launched = await cli(['launch', '-n', 'my-whisper', '-t', 'audio', '--model-engine', 'whisper.cpp'])
    expect(launched.exitCode, launched.stderr).to.equal(0)
    // The family's default_transcription_config gives the language the request leaves out.
    const result = await client.audio.transcriptions.create({file: await upload(speech), model: 'my-whisper', response_format: 'verbose_json'})
    expect(result.language).to.equal('german')
  })
})

describe('audio: a catalogue Whisper downloaded from the hub (fake hub, real repository layout)', function () {
  this.timeout(120_000)
  let hub: FakeHub
  let service: RunningService

  before(async () => {
    const directory = await temporaryDirectory()
    const ggml = join(directory, 'ggml-tiny.bin')
    await writeRandomWhisperGgml(ggml)
    hub = await FakeHub.start()
    await hub.addRepo('ggerganov/whisper.cpp', {'ggml-tiny.bin': ggml})
    service = await startService({env: {HF_ENDPOINT: hub.url}})
  })

  after(async () => {
    await service?.stop()
    await hub?.stop()
  })

  it('launches whisper-tiny from ggerganov/whisper.cpp\'s ggml-tiny.bin and transcribes with it', async () => {
    const launched = await servicectl(['launch', '-n', 'whisper-tiny', '-t', 'audio', '--model-engine', 'whisper.cpp'], {env: {SERVICE_ENDPOINT: service.url}})
    expect(launched.exitCode, launched.stderr).to.equal(0)
    expect(hub.requests.some((request) => request.kind === 'file' || request.url.includes('ggml-tiny.bin'))).to.equal(true)
    const directory = await temporaryDirectory()
    const client = new OpenAI({apiKey: 'not-needed', baseURL: `${service.url}/v1`, maxRetries: 0})
    const result = await client.audio.transcriptions.create({file: await toFile(await readFile(await writeTestAudio(directory, 'ogg', 2)), 'speech.ogg'), model: 'whisper-tiny', response_format: 'verbose_json'})
    expect(result.duration).to.be.closeTo(2, 0.1)
  })
})
