/**
 * Structured logs on a real `service-local --log-format json`, driven with the official OpenAI client: every line
 * of the service's log and of a model's log is a JSON object with level, time and message; each request gets an id
 * (the caller's `X-Request-Id` when it is safe to log, a new one otherwise) echoed back, and its access line and the
 * model's lines about it carry that id.
 */
import {expect} from 'chai'
import {readFile} from 'node:fs/promises'
import {connect} from 'node:net'
import {join} from 'node:path'
import OpenAI from 'openai'

import {callApi, type RunningService, startService, until} from '../helpers/service.js'

type LogLine = Record<string, unknown> & {level: string; msg: string; time: string}

describe('JSON logs and request ids (service-local --log-format json, openai client)', function () {
  let service: RunningService
  let client: OpenAI

  const logLines = async (file: string): Promise<LogLine[]> =>
    (await readFile(join(service.home, 'logs', file), 'utf8'))
      .split('\n')
      .filter(Boolean)
      .map((line) => {
        const parsed = JSON.parse(line) as LogLine
        expect(parsed, line).to.include.keys('level', 'time', 'msg')
        expect(new Date(parsed.time).toISOString(), line).to.equal(parsed.time)
        return parsed
      })
  const accessLine = (requestId: string) =>
    until(async () => (await logLines('service-local.log')).find((line) => line.request_id === requestId && line.route !== undefined), `the access line of ${requestId}`)
  /** Clients refuse to send control characters in a header, so this one writes the request itself. */
  const rawGet = (path: string, requestId: string) =>
    new Promise<{status: number; headers: Record<string, string>}>((resolve, reject) => {
      const {hostname, port} = new URL(service.url)
      const socket = connect(Number(port), hostname, () => socket.end(`GET ${path} HTTP/1.1\r\nHost: ${hostname}\r\nX-Request-Id: ${requestId}\r\nConnection: close\r\n\r\n`))
      let reply = ''
      socket.on('data', (chunk: Buffer) => (reply += chunk.toString('latin1')))
      socket.on('error', reject)
      socket.on('close', () => {
        const [statusLine, ...headerLines] = reply.split('\r\n\r\n')[0].split('\r\n')
        const headers = Object.fromEntries(headerLines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]))
        resolve({headers, status: Number(statusLine.split(' ')[1])})
      })
    })
  const chat = (headers: Record<string, string> = {}) =>
    client.chat.completions.create({max_tokens: 3, messages: [{content: 'Hello!', role: 'user'}], model: 'tiny', temperature: 0}, {headers}).withResponse()

  before(async () => {
    service = await startService({args: ['--log-format', 'json']})
    client = new OpenAI({apiKey: 'not-needed', baseURL: `${service.url}/v1`, maxRetries: 0})
    const launched = await callApi(service, 'POST', '/v1/models', {model_engine: 'llama.cpp', model_name: 'tiny-random-llm', model_uid: 'tiny', n_threads: 1})
    expect(launched.status, JSON.stringify(launched.body)).to.equal(200)
  })

  after(async () => service?.stop())

  it('echoes the X-Request-Id a client sends, and its access line at info and the model log lines about it carry it', async () => {
    const {data, response} = await chat({'X-Request-Id': 'abc-123'})
    expect(response.headers.get('x-request-id')).to.equal('abc-123')
    const access = await accessLine('abc-123')
    expect(access).to.include({completion_tokens: data.usage!.completion_tokens, level: 'info', model: 'tiny', prompt_tokens: data.usage!.prompt_tokens, route: '/v1/chat/completions', status: 200})
    expect(access.duration_ms).to.be.a('number')
    const modelLines = await until(async () => {
      const lines = (await logLines('models/tiny.log')).filter((line) => line.request_id === 'abc-123')
      return lines.some((line) => line.msg.startsWith('request finished')) ? lines : undefined
    }, "the model's line about abc-123")
    expect(modelLines.every((line) => line.name === 'model')).to.equal(true)
  })

  it('gives a request without an id a new one, echoed and logged', async () => {
    const {response} = await chat()
    const generated = response.headers.get('x-request-id')
    expect(generated).to.match(/^[0-9a-f-]{36}$/)
    expect(await accessLine(generated!)).to.include({route: '/v1/chat/completions', status: 200})
  })

  it('replaces an id a log could not safely quote: control characters, or 10 kB of it', async () => {
    // Node's HTTP parser answers most control characters in a header with a 400 before the app sees the request.
    for (const refused of ['abc\u001B[2J', 'del\u007F']) expect((await rawGet('/v1/models', refused)).status).to.equal(400)
    for (const bad of ['tab\there', 'c1\u0085', 'x'.repeat(10_000)]) {
      const {headers, status} = await rawGet('/v1/models', bad)
      expect(status, JSON.stringify(bad.slice(0, 12))).to.equal(200)
      const replaced = headers['x-request-id']
      expect(replaced).to.match(/^[0-9a-f-]{36}$/)
      expect(await accessLine(replaced!)).to.include({route: '/v1/models', status: 200})
    }

    const logged = await readFile(join(service.home, 'logs', 'service-local.log'), 'utf8')
    expect(logged).not.to.include('\u001B')
    expect(logged).not.to.include('x'.repeat(10_000))
  })

  it('writes every line of the service log and the model log as JSON with level, time and message', async () => {
    expect(await logLines('service-local.log')).to.have.length.above(3)
    expect(await logLines('models/tiny.log')).to.have.length.above(1)
  })
})

describe('text logs and request ids (service-local, default format)', function () {
  let service: RunningService

  before(async () => {
    service = await startService()
    const launched = await callApi(service, 'POST', '/v1/models', {model_engine: 'llama.cpp', model_name: 'tiny-random-llm', model_uid: 'tiny', n_threads: 1})
    expect(launched.status, JSON.stringify(launched.body)).to.equal(200)
  })

  after(async () => service?.stop())

  it("timestamps every model log line as the service's, and marks the access line and the model's lines of a request with its id", async () => {
    const client = new OpenAI({apiKey: 'not-needed', baseURL: `${service.url}/v1`, maxRetries: 0})
    const {response} = await client.chat.completions.create({max_tokens: 3, messages: [{content: 'Hello!', role: 'user'}], model: 'tiny'}, {headers: {'X-Request-Id': 'text-1'}}).withResponse()
    expect(response.headers.get('x-request-id')).to.equal('text-1')
    const access = await until(
      async () => (await readFile(join(service.home, 'logs', 'service-local.log'), 'utf8')).split('\n').find((line) => line.includes('request_id=text-1')),
      'the access line',
    )
    expect(access).to.match(/^\S+Z info {2}\[local\] POST \/v1\/chat\/completions status=200 duration_ms=[\d.]+ route=\/v1\/chat\/completions model=tiny prompt_tokens=\d+ completion_tokens=\d+ ttft_ms=[\d.]+ request_id=text-1$/)
    const modelLines = await until(async () => {
      const lines = (await readFile(join(service.home, 'logs', 'models', 'tiny.log'), 'utf8')).split('\n').filter(Boolean)
      return lines.some((line) => line.includes('request finished')) ? lines : undefined
    }, "the model's line about the request")
    for (const line of modelLines) expect(line).to.match(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (debug|info |warn |error) \[model\] /)
    expect(modelLines.find((line) => line.includes('request finished'))).to.match(/ request_id=text-1$/)
  })
})
