/**
 * Text to speech end to end: `service-local` launches tiny-random-vits (a VITS model transformers builds from a tiny
 * config with random weights) with the VITS engine, whose Python program runs in a virtual environment the kernel
 * makes with uv (cached under ~/.cache/service-test, so only the first run installs PyPI's transformers and the
 * local CPU build of PyTorch). The official `openai` client asks for speech in every format; FFmpeg's ffprobe reads
 * what came back. The audio is noise: the tests check formats, lengths, voices, streaming and refusals.
 */
import {expect} from 'chai'
import {execa} from 'execa'
import {readdir, readFile, writeFile} from 'node:fs/promises'
import {join} from 'node:path'
import {Readable} from 'node:stream'
import {setTimeout as delay} from 'node:timers/promises'
import OpenAI from 'openai'

import {Client} from '../../src/client/index.js'
import {type OpenApiDocument, OpenApiChecker} from '../helpers/openapi-checker.js'
import {TEST_CACHE, uvFromPyPI} from '../helpers/python-tools.js'
import {callApi, closedPort, type RunningService, servicectl, startService, temporaryDirectory, until} from '../helpers/service.js'

const INPUT = 'Hello there. This is the second sentence! And is this the third?'

/** The codec and sample rate FFmpeg's ffprobe reads, and the length of the audio it decodes (a streamed file's header may not say). */
async function probe(path: string): Promise<{codec: string; rate: number; duration: number}> {
  const {stdout} = await execa('ffprobe', ['-v', 'error', '-show_entries', 'stream=codec_name,sample_rate', '-of', 'json', path])
  const {streams} = JSON.parse(stdout) as {streams: Array<{codec_name: string; sample_rate: string}>}
  const decoded = await execa('ffmpeg', ['-v', 'error', '-i', path, '-f', 's16le', '-ac', '1', '-ar', '24000', 'pipe:1'], {encoding: 'buffer'})
  return {codec: streams[0].codec_name, duration: decoded.stdout.length / 2 / 24_000, rate: Number(streams[0].sample_rate)}
}

describe('audio: text to speech with the VITS engine (service-local, virtual environment, openai client)', function () {
  this.timeout(600_000)
  let service: RunningService
  let client: OpenAI
  let directory: string

  before(async () => {
    directory = await temporaryDirectory()
    const uv = await uvFromPyPI()
    const unreachable = `http://127.0.0.1:${await closedPort()}`
    service = await startService({
      env: {HF_ENDPOINT: unreachable, MODELSCOPE_ENDPOINT: unreachable, PATH: `${uv}:${process.env.PATH}`, SERVICE_VIRTUALENV_DIR: join(TEST_CACHE, 'virtualenv')},
    })
    client = new OpenAI({apiKey: 'not-needed', baseURL: `${service.url}/v1`, maxRetries: 0})
    const launched = await servicectl(['launch', '-n', 'tiny-random-vits', '-t', 'audio', '--model-engine', 'vits'], {env: {SERVICE_ENDPOINT: service.url}})
    expect(launched.exitCode, launched.stderr).to.equal(0)
  })

  after(async () => service?.stop())

  it('answers /v1/audio/speech as /openapi.json declares it', async () => {
    const checker = new OpenApiChecker((await callApi(service, 'GET', '/openapi.json')).body as OpenApiDocument)
    for (const format of ['mp3', 'wav', 'pcm']) {
      const answer = await checker.call(service, 'POST', '/v1/audio/speech', {body: {input: 'Hello.', model: 'tiny-random-vits', response_format: format, voice: 'default'}})
      expect(answer.status, format).to.equal(200)
    }
  })

  it('speaks in every response format, resampled to 24 kHz, each voice differently', async () => {
    const codecs = {aac: 'aac', flac: 'flac', mp3: 'mp3', opus: 'opus', wav: 'pcm_s16le'}
    for (const [format, codec] of Object.entries(codecs)) {
      const response = await client.audio.speech.create({input: INPUT, model: 'tiny-random-vits', response_format: format as 'mp3', voice: 'default'})
      const path = join(directory, `speech.${format}`)
      await writeFile(path, Buffer.from(await response.arrayBuffer()))
      const heard = await probe(path)
      // Opus always decodes at 48 kHz, whatever rate went in.
      expect(heard, format).to.include({codec, rate: format === 'opus' ? 48_000 : 24_000})
      expect(heard.duration, format).to.be.greaterThan(0.1)
    }

    const pcm = async (voice: string) => Buffer.from(await (await client.audio.speech.create({input: INPUT, model: 'tiny-random-vits', response_format: 'pcm', voice})).arrayBuffer())
    const [first, second] = [await pcm('default'), await pcm('second')]
    expect(first.length % 2).to.equal(0)
    expect(first.length).to.be.greaterThan(0)
    expect(first.equals(second)).to.equal(false)
  })

  it('streams: the first sentence\'s audio arrives before the body ends, and speed changes the length', async () => {
    const response = await fetch(`${service.url}/v1/audio/speech`, {
      body: JSON.stringify({input: INPUT, model: 'tiny-random-vits', response_format: 'pcm', voice: 'default'}),
      headers: {'content-type': 'application/json'},
      method: 'POST',
    })
    expect(response.headers.get('content-type')).to.equal('audio/pcm')
    let chunks = 0
    for await (const _ of response.body!) chunks++
    expect(chunks).to.be.greaterThan(1)

    const length = async (speed: number) => (await (await client.audio.speech.create({input: INPUT, model: 'tiny-random-vits', response_format: 'pcm', speed, voice: 'default'})).arrayBuffer()).byteLength
    expect(await length(2)).to.be.lessThan(await length(0.5))
  })

  it('speaks to a file with `servicectl speak` and the client library, leaving no file when refused', async () => {
    const cli = (args: string[], input?: string | Readable) => servicectl(args, {env: {SERVICE_ENDPOINT: service.url}, input})
    const flac = join(directory, 'hello.flac')
    const spoken = await cli(['speak', '-u', 'tiny-random-vits', '-o', flac, INPUT])
    expect(spoken.exitCode, spoken.stderr).to.equal(0)
    expect(spoken.stdout).to.match(/^Wrote .*hello\.flac \(flac, \d+ bytes\)/)
    expect((await probe(flac)).codec).to.equal('flac')
    // The text comes at once and the pipe ends later than oclif's own 10 ms wait for stdin, as a slow pipe's would.
    const lateStdin = Readable.from((async function* () {
      yield 'Read from stdin.'
      await delay(200)
    })())
    const piped = await cli(['speak', '-u', 'tiny-random-vits', '--voice', 'second', '-o', join(directory, 'piped.mp3')], lateStdin)
    expect(piped.exitCode, piped.stderr).to.equal(0)
    // An .ogg file holds Ogg Opus, OpenAI's `opus`; an extension of no audio format is refused before anything is asked.
    const ogg = join(directory, 'hello.ogg')
    expect((await cli(['speak', '-u', 'tiny-random-vits', '-o', ogg, 'Hello.'])).exitCode).to.equal(0)
    expect((await probe(ogg)).codec).to.equal('opus')
    const unknown = await cli(['speak', '-u', 'tiny-random-vits', '-o', join(directory, 'hello.txt'), 'Hello.'])
    expect(unknown.exitCode).to.equal(2)
    expect(unknown.stderr.replaceAll(/\s+(›\s+)?/g, ' ')).to.contain('.txt is no audio format this can write')
    const refused = await cli(['speak', '-u', 'tiny-random-vits', '--voice', 'alloy', '-o', join(directory, 'refused.wav'), 'Hello.'])
    expect(refused.exitCode).to.not.equal(0)
    expect(refused.stderr).to.contain('`voice` "alloy" is not a voice of this model')
    expect(await readdir(directory)).to.not.include.members(['refused.wav', 'refused.wav.partial'])

    let bytes = 0
    for await (const chunk of new Client(service.url).model('tiny-random-vits').speech(INPUT, {response_format: 'pcm', voice: 'default'})) bytes += chunk.length
    expect(bytes).to.be.greaterThan(0)
  })

  it('stops synthesizing when the client goes away', async () => {
    const sentences = Array.from({length: 60}, (_, i) => `This is sentence number ${i + 1}.`).join(' ')
    const abort = new AbortController()
    const response = await fetch(`${service.url}/v1/audio/speech`, {
      body: JSON.stringify({input: sentences, model: 'tiny-random-vits', response_format: 'pcm', voice: 'default'}),
      headers: {'content-type': 'application/json'},
      method: 'POST',
      signal: abort.signal,
    })
    const reader = response.body!.getReader()
    await reader.read()
    abort.abort()
    const log = join(service.home, 'logs', 'models', 'tiny-random-vits.log')
    const stopped = await until(async () => /speech stopped: the client went away after (\d+) of 60 sentences/.exec(await readFile(log, 'utf8'))?.[1], 'the engine to stop', 60_000)
    expect(Number(stopped)).to.be.lessThan(60)
  })

  it('refuses an unknown voice, input over the limit and formats it does not make, naming the field', async () => {
    const refused = async (body: Record<string, unknown>) => callApi(service, 'POST', '/v1/audio/speech', {input: 'Hello.', model: 'tiny-random-vits', voice: 'default', ...body})
    const voice = await refused({voice: 'alloy'})
    expect(voice.status).to.equal(400)
    expect(voice.body).to.nested.include({'error.param': 'voice'})
    expect((voice.body as {error: {message: string}}).error.message).to.contain('default, second')
    const long = await refused({input: 'a'.repeat(4097)})
    expect(long.status).to.equal(400)
    expect(long.body).to.nested.include({'error.param': 'input'})
    expect((long.body as {error: {message: string}}).error.message).to.contain('4096')
    expect((await refused({response_format: 'ogg'})).body).to.nested.include({'error.param': 'response_format'})
    expect((await refused({speed: 5})).body).to.nested.include({'error.param': 'speed'})
    const transcribe = await callApi(service, 'POST', '/v1/audio/speech', {input: 'Hello.', model: 'no-such-model', voice: 'default'})
    expect(transcribe.status).to.equal(404)
  })
})
