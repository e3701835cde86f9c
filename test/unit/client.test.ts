import {expect} from 'chai'
import {readFileSync} from 'node:fs'
import {createServer, type Server} from 'node:http'

import {Client, CLIENT_VERSION} from '../../src/client/index.js'
import {ServiceError, toAnthropicErrorBody} from '../../src/kernel/errors.js'
import {toServerSentEvents} from '../../src/server/sse.js'

/** What the streaming routes below fail with, after a first event: the error of the path's last segment. */
const STREAM_ERRORS: Record<string, ServiceError> = {
  aborted: new ServiceError(499, 'request_aborted', 'the request was stopped: its client went away.'),
  internal: new ServiceError(500, 'internal_error', 'the model crashed.'),
  missing: new ServiceError(404, 'model_not_found', 'model "x" is not running.', 'model'),
  overloaded: new ServiceError(503, 'overloaded', 'the model has too many requests waiting.'),
  wrong: new ServiceError(422, 'invalid_request', 'temperature must be at most 2.', 'temperature'),
}

async function* failingStream(error: ServiceError) {
  yield {choices: [{delta: {content: 'Hel'}, index: 0}]}
  throw error
}

describe('client library', () => {
  let server: Server
  let endpoint: string
  let version = '0.0.0-other'

  before(async () => {
    server = createServer((request, response) => {
      response.setHeader('x-service-version', version)
      response.setHeader('content-type', 'application/json')
      const streamed = STREAM_ERRORS[request.url?.split('/').at(-1) ?? '']
      if (streamed) {
        request.resume()
        response.setHeader('content-type', 'text/event-stream')
        // The server's own writer of in-stream errors: OpenAI's envelope, or under /anthropic Anthropic's `event: error`.
        const errorEvent = request.url!.startsWith('/anthropic') ? (error: ServiceError) => ({data: toAnthropicErrorBody(error), event: 'error'}) : undefined
        toServerSentEvents(failingStream(streamed), {errorEvent}).pipe(response)
      } else if (request.url === '/v1/models') response.end(JSON.stringify({data: [], object: 'list'}))
      else {
        response.statusCode = 404
        response.end(JSON.stringify({error: {code: 'model_not_found', message: 'model "x" is not running.', param: 'model', type: 'not_found_error'}}))
      }
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    endpoint = `http://127.0.0.1:${(server.address() as {port: number}).port}`
  })

  after(() => server.close())

  it('says once, clearly, when the service runs another version', async () => {
    const warnings: string[] = []
    const client = new Client(endpoint, {onVersionMismatch: (message) => warnings.push(message)})
    await client.list()
    await client.list()
    expect(warnings).to.deep.equal([`the service at ${endpoint} runs version 0.0.0-other but this client is ${CLIENT_VERSION}; upgrade whichever is older so they match.`])
    version = CLIENT_VERSION
    const quiet: string[] = []
    await new Client(endpoint, {onVersionMismatch: (message) => quiet.push(message)}).list()
    expect(quiet).to.deep.equal([])
  })

  it("speaks the package's version, written in the client so it needs no file system", () => {
    expect(CLIENT_VERSION).to.equal(JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')).version)
  })

  it("turns an error answer into a ServiceError with the server's message, code and status", async () => {
    const error = await new Client(endpoint).terminate('x').catch((e) => e)
    expect(error).to.include({code: 'model_not_found', message: 'model "x" is not running.', param: 'model', status: 404})
  })

  it('turns an error sent inside a stream into a ServiceError with the status its type stands for, keeping code and param', async () => {
    const client = new Client(endpoint, {onVersionMismatch() {}})
    const failure = async (path: string) => {
      const chunks: unknown[] = []
      try {
        for await (const chunk of client.stream(path, {stream: true})) chunks.push(chunk)
      } catch (error) {
        expect(chunks, path).to.have.length(1)
        return error
      }

      return expect.fail(`${path} ended without an error`)
    }

    expect(await failure('/v1/chat/completions/missing')).to.include({code: 'model_not_found', message: 'model "x" is not running.', param: 'model', status: 404})
    // invalid_request_error stands for several statuses; it reads as the plainest of them.
    expect(await failure('/v1/chat/completions/wrong')).to.include({code: 'invalid_request', param: 'temperature', status: 400})
    expect(await failure('/v1/chat/completions/aborted')).to.include({code: 'request_aborted', status: 499})
    expect(await failure('/v1/chat/completions/internal')).to.include({code: 'internal_error', param: null, status: 500})
    // Anthropic's envelope carries no code or param: its type stands in for the code.
    expect(await failure('/anthropic/v1/messages/overloaded')).to.include({code: 'overloaded_error', message: 'the model has too many requests waiting.', param: null, status: 503})
    expect(await failure('/anthropic/v1/messages/missing')).to.include({code: 'not_found_error', status: 404})
  })
  describe('against a server that is not the service', () => {
    let page: Server
    let url: string

    before(async () => {
      // A web server's pages: 200 for /v1/models, "404 File not found" (Python's http.server) for the rest.
      page = createServer((request, response) => {
        request.resume()
        if (request.url === '/v1/models') response.writeHead(200, {'content-type': 'text/html; charset=utf-8'})
        else response.writeHead(404, 'File not found', {'content-type': 'text/html;charset=utf-8'})
        response.end('<!DOCTYPE HTML>\n<html>\n<body>Nothing here</body>\n</html>\n')
      })
      await new Promise<void>((resolve) => page.listen(0, '127.0.0.1', resolve))
      url = `http://127.0.0.1:${(page.address() as {port: number}).port}`
    })

    after(() => page.close())

    it('says in one line what answered, and how to point to the service, for a page whatever its status', async () => {
      const client = new Client(url)
      const how = 'point to the service with --endpoint or SERVICE_ENDPOINT.'
      expect(await client.list().catch((error) => error)).to.include({
        code: 'unexpected_response',
        message: `the server at ${url} is not the service: it answered GET /v1/models with 200 OK (text/html); ${how}`,
        status: 502,
      })
      expect(await client.terminate('x').catch((error) => error)).to.include({
        code: 'unexpected_response',
        message: `the server at ${url} is not the service: it answered DELETE /v1/models/x with 404 File not found (text/html); ${how}`,
      })
    })

    it('fails a stream answered with anything but events, rather than ending it with no event', async () => {
      const events = new Client(url).stream('/v1/models', {stream: true})
      expect(await events.next().catch((error) => error)).to.include({
        code: 'unexpected_response',
        message: `the server at ${url} is not the service: it answered POST /v1/models with 200 OK (text/html); point to the service with --endpoint or SERVICE_ENDPOINT.`,
      })
    })
  })
})
