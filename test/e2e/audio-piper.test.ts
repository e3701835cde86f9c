/**
 * Piper voices end to end: `service-local` launches tiny-random-piper, a three-speaker Piper voice that Piper's own
 * training code builds with random weights and exports to ONNX on first launch (in a virtual environment with the
 * CPU build of PyTorch), and the Piper engine runs it with piper-tts on ONNX Runtime in a virtual environment of its
 * own; both are made with uv and cached under ~/.cache/service-test. The official `openai` client asks for speech
 * with OpenAI's voice names and the voice's own speakers. The voice has no sampling noise, so the same speaker
 * always gives the same audio and different speakers differ. A catalogue voice is then downloaded from a local hub
 * in rhasspy/piper-voices' layout.
 */
import {expect} from 'chai'
import {execa} from 'execa'
import {readFile} from 'node:fs/promises'
import {join} from 'node:path'
import OpenAI from 'openai'

import {FakeHub} from '../helpers/fake-hub.js'
import {type OpenApiDocument, OpenApiChecker} from '../helpers/openapi-checker.js'
import {TEST_CACHE, uvFromPyPI} from '../helpers/python-tools.js'
import {callApi, type RunningService, servicectl, startService, until} from '../helpers/service.js'

const INPUT = 'Hello there. This is the second sentence! And is this the third?'

describe('audio: text to speech with Piper voices (service-local, virtual environments, openai client)', function () {
  this.timeout(600_000)
  let hub: FakeHub
  let service: RunningService
  let client: OpenAI
  const cli = (args: string[]) => servicectl(args, {env: {SERVICE_ENDPOINT: service.url}})
  const pcm = async (voice: string, model = 'tiny-random-piper', speed?: number) =>
    Buffer.from(await (await client.audio.speech.create({input: INPUT, model, response_format: 'pcm', voice, ...(speed ? {speed} : {})})).arrayBuffer())

  before(async () => {
    hub = await FakeHub.start()
    const uv = await uvFromPyPI()
    service = await startService({env: {HF_ENDPOINT: hub.url, PATH: `${uv}:${process.env.PATH}`, SERVICE_VIRTUALENV_DIR: join(TEST_CACHE, 'virtualenv')}})
    client = new OpenAI({apiKey: 'not-needed', baseURL: `${service.url}/v1`, maxRetries: 0})
    const launched = await cli(['launch', '-n', 'tiny-random-piper', '-t', 'audio', '--model-engine', 'piper'])
    expect(launched.exitCode, launched.stderr).to.equal(0)
  })

  after(async () => {
    await service?.stop()
    await hub?.stop()
  })

  it('answers /v1/audio/speech as /openapi.json declares it', async () => {
    const checker = new OpenApiChecker((await callApi(service, 'GET', '/openapi.json')).body as OpenApiDocument)
    for (const format of ['mp3', 'wav', 'pcm']) {
      const answer = await checker.call(service, 'POST', '/v1/audio/speech', {body: {input: 'Hello.', model: 'tiny-random-piper', response_format: format, voice: 'alloy'}})
      expect(answer.status, format).to.equal(200)
    }
  })

  it('speaks with each speaker by name, and maps OpenAI\'s voices onto the speakers in order', async () => {
    const [first, second, third] = [await pcm('p225'), await pcm('p226'), await pcm('p227')]
    expect(first.length).to.be.greaterThan(0)
    expect(first.equals(second)).to.equal(false)
    expect(second.equals(third)).to.equal(false)
    // alloy, ash, ballad, cedar, … : speaker ids 0, 1, 2, 0, …; `default` is the voice's default speaker (0).
    expect((await pcm('alloy')).equals(first)).to.equal(true)
    expect((await pcm('ash')).equals(second)).to.equal(true)
    expect((await pcm('ballad')).equals(third)).to.equal(true)
    expect((await pcm('cedar')).equals(first)).to.equal(true)
    expect((await pcm('default')).equals(first)).to.equal(true)

    const mp3 = await client.audio.speech.create({input: INPUT, model: 'tiny-random-piper', voice: 'nova'})
    expect(mp3.headers.get('content-type')).to.equal('audio/mpeg')
    expect((await mp3.arrayBuffer()).byteLength).to.be.greaterThan(0)
  })

  it('streams sentence by sentence, and speed changes the length', async () => {
    const response = await fetch(`${service.url}/v1/audio/speech`, {
      body: JSON.stringify({input: INPUT, model: 'tiny-random-piper', response_format: 'pcm', voice: 'p226'}),
      headers: {'content-type': 'application/json'},
      method: 'POST',
    })
    let chunks = 0
    for await (const _ of response.body!) chunks++
    expect(chunks).to.be.greaterThan(1)
    expect((await pcm('p226', 'tiny-random-piper', 2)).length).to.be.lessThan((await pcm('p226', 'tiny-random-piper', 0.5)).length)
  })

  it('refuses an unknown voice with a 400 naming `voice` and listing the speakers and OpenAI\'s voices', async () => {
    const refused = await callApi(service, 'POST', '/v1/audio/speech', {input: 'Hello.', model: 'tiny-random-piper', voice: 'bob'})
    expect(refused.status).to.equal(400)
    expect(refused.body).to.nested.include({'error.param': 'voice'})
    const {message} = (refused.body as {error: {message: string}}).error
    expect(message).to.contain('"bob" is not a voice of this model')
    expect(message).to.contain('p225, p226, p227')
    expect(message).to.contain('alloy, ash')
    const cliRefused = await cli(['speak', '-u', 'tiny-random-piper', '--voice', 'bob', '-o', join(service.home, 'refused.wav'), 'Hello.'])
    expect(cliRefused.exitCode).to.not.equal(0)
    expect(cliRefused.stderr).to.contain('`voice` "bob" is not a voice of this model')
  })

  it('stops synthesizing when the client goes away', async () => {
    // 200 sentences at a quarter of the pace: far more audio than the connection buffers, made one sentence at a time.
    const sentences = Array.from({length: 200}, (_, i) => `Sentence ${i + 1}.`).join(' ')
    const abort = new AbortController()
    const response = await fetch(`${service.url}/v1/audio/speech`, {
      body: JSON.stringify({input: sentences, model: 'tiny-random-piper', response_format: 'pcm', speed: 0.25, voice: 'p225'}),
      headers: {'content-type': 'application/json'},
      method: 'POST',
      signal: abort.signal,
    })
    await response.body!.getReader().read()
    abort.abort()
    const log = join(service.home, 'logs', 'models', 'tiny-random-piper.log')
    const stopped = await until(async () => /speech stopped: the client went away after (\d+) sentences/.exec(await readFile(log, 'utf8'))?.[1], 'the engine to stop', 60_000)
    expect(Number(stopped)).to.be.lessThan(200)
  })

  it('downloads a catalogue voice in rhasspy/piper-voices\' layout and speaks with it', async () => {
    const {stdout} = await execa('find', [service.home, '-name', 'tiny-random-piper.onnx*', '-not', '-name', '*.partial'])
    const [onnx, config] = stdout.split('\n').sort()
    await hub.addRepo('rhasspy/piper-voices', {'en/en_US/lessac/medium/en_US-lessac-medium.onnx': onnx, 'en/en_US/lessac/medium/en_US-lessac-medium.onnx.json': config})
    const listed = await cli(['registrations', '-t', 'audio'])
    expect(listed.stdout).to.contain('piper-en_GB-vctk').and.to.contain('piper-en_US-libritts_r')
    const launched = await cli(['launch', '-n', 'piper-en_US-lessac', '-t', 'audio', '--model-engine', 'piper'])
    expect(launched.exitCode, launched.stderr).to.equal(0)
    expect(hub.requests.some((request) => request.url.includes('en/en_US/lessac/medium/en_US-lessac-medium.onnx'))).to.equal(true)
    expect((await pcm('alloy', 'piper-en_US-lessac')).equals(await pcm('p225'))).to.equal(true)
  })
})
