/**
 * servicectl's fetch on node:http: what the client reads of an answer (status, headers, text, JSON, a streamed
 * body), bodies sent whole, aborts, and what it hands to Node's own fetch (uploads, redirects), against a real
 * HTTP server on a free port.
 */
import {expect} from 'chai'
import {createServer, type IncomingMessage, type Server, type ServerResponse} from 'node:http'
import type {AddressInfo} from 'node:net'

import {httpFetch} from '../../src/cli/http-fetch.js'
import {Client} from '../../src/client/client.js'

interface Seen {
  method?: string
  url?: string
  headers: IncomingMessage['headers']
  body: string
}

describe("servicectl's fetch on node:http", () => {
  let server: Server
  let base: string
  let seen: Seen[]
  let handle: (request: IncomingMessage, response: ServerResponse, body: string) => void

  before(async () => {
    server = createServer(async (request, response) => {
      let body = ''
      for await (const chunk of request) body += chunk
      seen.push({body, headers: request.headers, method: request.method, url: request.url})
      handle(request, response, body)
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  })

  beforeEach(() => {
    seen = []
  })

  after(async () => {
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
  })

  it('answers status, headers and JSON as fetch does, and sends a text body whole with its length', async () => {
    handle = (_request, response, body) => response.writeHead(201, 'Made', {'content-type': 'application/json', 'x-two': ['a', 'b']}).end(JSON.stringify({echo: body}))
    const response = await httpFetch(`${base}/v1/models?x=1`, {body: '{"ü":1}', headers: {authorization: 'Bearer k', 'content-type': 'application/json'}, method: 'POST'})
    expect({ok: response.ok, status: response.status, statusText: response.statusText}).to.deep.equal({ok: true, status: 201, statusText: 'Made'})
    expect(response.headers.get('Content-Type')).to.equal('application/json')
    expect(response.headers.get('x-two')).to.equal('a, b')
    expect(response.headers.get('x-missing')).to.equal(null)
    expect(await response.json()).to.deep.equal({echo: '{"ü":1}'})
    expect(seen[0]).to.deep.include({method: 'POST', url: '/v1/models?x=1'})
    expect(seen[0].headers).to.include({authorization: 'Bearer k', 'content-length': String(Buffer.byteLength('{"ü":1}'))})
  })

  it('streams a body as a web ReadableStream, piece by piece', async () => {
    handle = (_request, response) => {
      response.writeHead(200, {'content-type': 'text/event-stream'})
      response.write('data: 1\n\n')
      setImmediate(() => response.end('data: [DONE]\n\n'))
    }

    const response = await httpFetch(`${base}/stream`)
    let text = ''
    for await (const chunk of response.body!) text += Buffer.from(chunk).toString()
    expect(text).to.equal('data: 1\n\ndata: [DONE]\n\n')
  })

  it('rejects with an AbortError when its signal aborts, and as fetch does (the cause named) when nothing listens', async () => {
    handle = () => undefined
    const controller = new AbortController()
    const pending = httpFetch(`${base}/never`, {signal: controller.signal})
    setImmediate(() => controller.abort())
    const aborted = await pending.then(() => undefined, (error: Error) => error)
    expect(aborted?.name).to.equal('AbortError')
    const refused = await httpFetch('http://127.0.0.1:1/').then(() => undefined, (error: Error) => error)
    expect(refused?.message).to.match(/ECONNREFUSED/)
  })

  it('leaves uploads and redirects to Node’s fetch, which encodes multipart and follows the redirect', async () => {
    handle = (request, response, body) => {
      if (request.url === '/moved') response.writeHead(307, {location: '/here'}).end()
      else response.writeHead(200, {'content-type': 'text/plain'}).end(`${request.url} ${request.headers['content-type']?.split(';')[0]} ${body.includes('name="model"') ? 'form' : body}`)
    }

    const form = new FormData()
    form.append('model', 'm')
    expect(await (await httpFetch(`${base}/upload`, {body: form, method: 'POST'})).text()).to.equal('/upload multipart/form-data form')
    expect(await (await httpFetch(`${base}/moved`)).text()).to.equal('/here undefined ')
  })

  it("serves the client's calls: JSON answers, a service error read back, and its version check", async () => {
    handle = (request, response) => {
      if (request.url === '/v1/models') response.writeHead(200, {'content-type': 'application/json', 'x-service-version': '0.0.1'}).end(JSON.stringify({data: [], object: 'list'}))
      else response.writeHead(404, {'content-type': 'application/json'}).end(JSON.stringify({error: {code: 'model_not_found', message: 'no model m'}}))
    }

    const warnings: string[] = []
    const client = new Client(base, {fetch: httpFetch, onVersionMismatch: (message) => warnings.push(message)})
    expect(await client.list()).to.deep.equal([])
    const failed = await client.get('m').then(() => undefined, (error: Error & {code?: string; status?: number}) => error)
    expect(failed).to.include({code: 'model_not_found', message: 'no model m', status: 404})
    expect(warnings).to.have.length(1)
  })
})
