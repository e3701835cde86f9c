import {expect} from 'chai'
import {readFileSync} from 'node:fs'
import {createServer, type Server} from 'node:http'

import {Client, CLIENT_VERSION} from '../../src/client/index.js'

describe('client library', () => {
  let server: Server
  let endpoint: string
  let version = '0.0.0-other'

  before(async () => {
    server = createServer((request, response) => {
      response.setHeader('x-service-version', version)
      response.setHeader('content-type', 'application/json')
      if (request.url === '/v1/models') response.end(JSON.stringify({data: [], object: 'list'}))
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
})
