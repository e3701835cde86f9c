/**
 * Routes that take multipart/form-data uploads, in an app served on a real socket: the official openai client's
 * transcription upload (toFile) and plain fetch with FormData. Each app writes its uploads to a folder of its own,
 * which must be empty again after every request, whatever became of it.
 */
import {expect} from 'chai'
import {mkdtemp, readdir, readFile, rm, stat} from 'node:fs/promises'
import {connect} from 'node:net'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import OpenAI, {toFile} from 'openai'

import type {RouteDefinition, RouteRequest} from '../../src/kernel/contracts.js'

import {notFound} from '../../src/kernel/errors.js'
import * as schema from '../../src/kernel/schema.js'
import {createApp} from '../../src/server/app.js'
import {listen, type Listening} from '../../src/server/listen.js'
import {openApiDocument} from '../../src/server/openapi.js'
import {docsRoutes} from '../../src/server/routes/docs.js'
import {until} from '../helpers/service.js'

const quiet = {debug() {}, error() {}, info() {}, warn() {}}
const NOT_RUNNING = 'not-running'
const fields = schema.object({language: schema.optional(schema.string()), model: schema.string()})

describe('multipart routes', () => {
  let uploads: string
  let server: Listening
  /** What the last request's handler saw, read while its files still existed. */
  let seen: {body: unknown; files: Array<{field: string; name?: string; type?: string; size: number; path: string; content: string}>} | undefined
  let streaming: AbortController | undefined

  const record = async ({body, files}: RouteRequest<unknown>) => {
    seen = {body, files: []}
    for (const [field, list] of Object.entries(files))
      for (const file of list) seen.files.push({...file, content: await readFile(file.path, 'utf8'), field})
  }

  const routes: RouteDefinition[] = [
    {
      body: fields as never,
      async handler(request) {
        await record(request)
        return {body: {text: `heard ${request.files.file[0].size} bytes`}, kind: 'json'}
      },
      method: 'POST',
      multipart: {files: {file: {required: true}, prompt_audio: {}}, maxFileBytes: 1024},
      path: '/v1/audio/transcriptions',
      summary: 'Transcription (stand-in)',
    },
    {
      async handler(request) {
        await record(request)
        throw new Error('the engine failed on purpose')
      },
      method: 'POST',
      multipart: {files: {image: {required: true}}, maxFileBytes: 1024},
      path: '/v1/images/edits',
      summary: 'Image edit that fails',
    },
    {
      async handler(request) {
        await record(request)
        streaming = new AbortController()
        const {signal} = streaming
        async function* events() {
          yield {part: 1}
          await new Promise((resolve) => signal.addEventListener('abort', resolve, {once: true}))
        }

        request.signal.addEventListener('abort', () => streaming?.abort(), {once: true})
        return {events: events(), kind: 'sse'}
      },
      method: 'POST',
      multipart: {files: {audio: {required: true}}, maxFileBytes: 1024},
      path: '/v1/audio/stream',
      summary: 'Streamed transcription',
    },
  ]

  const post = (path: string, form: FormData | string, headers: Record<string, string> = {}) => fetch(`${server.url}${path}`, {body: form, headers, method: 'POST'})
  const leftovers = () => readdir(uploads)

  before(async () => {
    uploads = await mkdtemp(join(tmpdir(), 'service-uploads-'))
    const all = [...routes, ...docsRoutes(() => openApiDocument(all, '0.0.0'))].map((definition) => ({definition, plugin: 'test'}))
    // Every model runs here but NOT_RUNNING; the stand-in routes never invoke one.
    const get = (uid: string): never => {
      if (uid === NOT_RUNNING) throw notFound(`model "${uid}" is not running.`, 'model_not_found', 'model')
      return {} as never
    }

    const app = createApp({log: quiet, models: {get, list: () => []}, routes: all, uploadDir: uploads, version: '0.0.0'})
    // Koa prints the stream the last test's client leaves on purpose; nothing to see.
    app.silent = true
    server = await listen(app, {host: '127.0.0.1', port: 0})
  })

  beforeEach(() => {
    seen = undefined
  })

  after(async () => {
    await server.close()
    await rm(uploads, {force: true, recursive: true})
  })

  it("takes the openai client's upload: typed fields and the file reach the handler, and the file is gone after", async () => {
    const openai = new OpenAI({apiKey: 'unused', baseURL: `${server.url}/v1`, maxRetries: 0})
    const audio = await toFile(Buffer.from('RIFF fake wave data'), 'hello.wav', {type: 'audio/wav'})
    const reply = await openai.audio.transcriptions.create({file: audio, language: 'en', model: 'whisper-test'})
    expect(reply.text).to.equal('heard 19 bytes')
    expect(seen!.body).to.deep.equal({language: 'en', model: 'whisper-test'})
    expect(seen!.files).to.have.lengthOf(1)
    expect(seen!.files[0]).to.deep.include({content: 'RIFF fake wave data', field: 'file', name: 'hello.wav', size: 19, type: 'audio/wav'})
    expect(seen!.files[0].path.startsWith(uploads)).to.equal(true)
    await stat(seen!.files[0].path).then(
      () => expect.fail('the upload is still there'),
      (error) => expect(error.code).to.equal('ENOENT'),
    )
    expect(await leftovers()).to.deep.equal([])
  })

  it('describes the upload in the OpenAPI document as multipart/form-data: text fields and files', async () => {
    const document = await (await fetch(`${server.url}/openapi.json`)).json()
    const {content} = document.paths['/v1/audio/transcriptions'].post.requestBody
    expect(Object.keys(content)).to.deep.equal(['multipart/form-data'])
    expect(content['multipart/form-data'].schema).to.deep.include({required: ['model', 'file'], type: 'object'})
    expect(content['multipart/form-data'].schema.properties).to.deep.include({file: {format: 'binary', type: 'string'}, model: {example: '', type: 'string'}})
    expect(await (await fetch(`${server.url}/docs`)).text()).to.contain('request body (multipart/form-data)')
  })

  it('answers 413 naming the limit for a file over it, and keeps nothing', async () => {
    const form = new FormData()
    form.append('model', 'whisper-test')
    form.append('file', new Blob(['x'.repeat(5000)]), 'long.wav')
    const response = await post('/v1/audio/transcriptions', form)
    expect(response.status).to.equal(413)
    const {error} = await response.json()
    expect(error.message).to.equal('the uploaded files are over the limits of POST /v1/audio/transcriptions: 1 KiB (1024 bytes) a file, 2 KiB (2048 bytes) in all.')

    const two = new FormData()
    two.append('model', 'whisper-test')
    two.append('file', new Blob(['x'.repeat(1500)]), 'a.wav')
    const refused = await post('/v1/audio/transcriptions', two)
    expect(refused.status).to.equal(413)
    expect((await refused.json()).error.message).to.equal('an uploaded file is larger than the 1 KiB (1024 bytes) limit of POST /v1/audio/transcriptions.')
    expect(seen).to.equal(undefined)
    expect(await leftovers()).to.deep.equal([])
  })

  it('answers 400 naming a required file field that is missing, and one the route does not take', async () => {
    const missing = new FormData()
    missing.append('model', 'whisper-test')
    const response = await post('/v1/audio/transcriptions', missing)
    expect(response.status).to.equal(400)
    expect((await response.json()).error).to.deep.include({message: '`file` is required: send the file as a multipart/form-data part named file.', param: 'file'})

    const stray = new FormData()
    stray.append('model', 'whisper-test')
    stray.append('file', new Blob(['abc']), 'a.wav')
    stray.append('picture', new Blob(['abc']), 'a.png')
    const refused = await post('/v1/audio/transcriptions', stray)
    expect(refused.status).to.equal(400)
    expect((await refused.json()).error.param).to.equal('picture')
    expect(seen).to.equal(undefined)
    expect(await leftovers()).to.deep.equal([])
  })

  it('answers 400 for a body that is not multipart, or not well-formed multipart', async () => {
    const json = await post('/v1/audio/transcriptions', JSON.stringify({model: 'x'}), {'content-type': 'application/json'})
    expect(json.status).to.equal(400)
    expect((await json.json()).error.message).to.equal('POST /v1/audio/transcriptions takes multipart/form-data (files in file, prompt_audio); this request sent application/json.')

    const broken = await post('/v1/audio/transcriptions', '--b\r\nContent-Disposition: form-data; name="file"; filename="a.wav"\r\n\r\nabc', {'content-type': 'multipart/form-data; boundary=b'})
    expect(broken.status).to.equal(400)
    expect((await broken.json()).error.message).to.match(/^the request body is not valid multipart\/form-data: /)
    expect(await leftovers()).to.deep.equal([])
  })

  it("takes text fields that say Content-Type: text/plain, as aiohttp's FormData (Xinference's async client) writes them", async () => {
    const boundary = 'aiohttp-boundary'
    const part = (headers: string, content: string) => `--${boundary}\r\n${headers}\r\n\r\n${content}\r\n`
    const body =
      part('Content-Type: text/plain; charset=utf-8\r\nContent-Disposition: form-data; name="model"', 'whisper-test') +
      part('Content-Type: application/octet-stream\r\nContent-Disposition: form-data; name="file"; filename="file"', 'RIFF') +
      `--${boundary}--\r\n`
    const response = await post('/v1/audio/transcriptions', body, {'content-type': `multipart/form-data; boundary=${boundary}`})
    expect(response.status, await response.clone().text()).to.equal(200)
    expect(seen!.body).to.deep.equal({model: 'whisper-test'})
    expect(seen!.files.map(({content, field}) => ({content, field}))).to.deep.equal([{content: 'RIFF', field: 'file'}])
  })

  it("takes a field sent empty as not given, as a form sends those left blank (/docs' Try it out)", async () => {
    const form = new FormData()
    form.append('model', 'whisper-test')
    form.append('language', '')
    form.append('prompt_audio', '')
    form.append('file', new Blob(['abc']), 'a.wav')
    const response = await post('/v1/audio/transcriptions', form)
    expect(response.status, await response.clone().text()).to.equal(200)
    expect(seen!.body).to.deep.equal({model: 'whisper-test'})
    expect(await leftovers()).to.deep.equal([])
  })

  it('text fields still go through the route schema', async () => {
    const form = new FormData()
    form.append('file', new Blob(['abc']), 'a.wav')
    const response = await post('/v1/audio/transcriptions', form)
    expect(response.status).to.equal(400)
    expect((await response.json()).error.param).to.equal('model')
    expect(await leftovers()).to.deep.equal([])
  })

  it('removes the files when the handler fails', async () => {
    const form = new FormData()
    form.append('image', new Blob(['png bytes']), 'a.png')
    const response = await post('/v1/images/edits', form)
    expect(response.status).to.equal(500)
    expect(seen!.files[0]).to.deep.include({content: 'png bytes', field: 'image'})
    expect(await leftovers()).to.deep.equal([])
  })

  it('keeps the files while a streamed reply lasts, and removes them when the client goes away', async () => {
    const form = new FormData()
    form.append('audio', new Blob(['pcm samples']), 'a.pcm')
    const response = await post('/v1/audio/stream', form)
    expect(response.status).to.equal(200)
    const reader = response.body!.getReader()
    await reader.read()
    expect(await leftovers()).to.have.lengthOf(1)
    await reader.cancel()
    await until(async () => ((await leftovers()).length === 0 ? true : undefined), 'the upload to be removed')
  })

  it('answers a request for a model that is not running as soon as its model field has arrived, without receiving its files', async () => {
    const {port} = new URL(server.url)
    const socket = connect(Number(port), '127.0.0.1')
    const boundary = 'stalled-upload'
    const head = [`--${boundary}`, 'Content-Disposition: form-data; name="model"', '', NOT_RUNNING, `--${boundary}`, 'Content-Disposition: form-data; name="file"; filename="a.wav"', 'Content-Type: audio/wav', '', 'RIFF'].join('\r\n')
    // Announces far more than it sends, then stalls: the answer cannot wait for the rest of the body.
    socket.write(`POST /v1/audio/transcriptions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: multipart/form-data; boundary=${boundary}\r\nContent-Length: 1000000\r\n\r\n${head}`)
    let answer = ''
    await new Promise<void>((resolve) =>
      socket.on('data', (chunk: Buffer) => {
        answer += chunk.toString()
        if (answer.endsWith('}}')) resolve()
      }),
    )
    socket.destroy()
    expect(answer).to.match(/^HTTP\/1\.1 404 /)
    expect(answer).to.contain('"param":"model"')
    expect(seen).to.equal(undefined)
    await until(async () => ((await leftovers()).length === 0 ? true : undefined), 'the begun upload to be removed')
  })
})
