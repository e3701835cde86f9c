/**
 * `servicectl chat` and `generate` as real processes, against a stand-in for the service whose answers each test
 * chooses: a refusal before the answer, a failure in the middle of it, a web server's page instead of the service.
 */
import {expect} from 'chai'
import {execa} from 'execa'
import {once} from 'node:events'
import {createServer, type Server} from 'node:http'
import type {AddressInfo} from 'node:net'

import {SERVICECTL, servicectl} from '../helpers/service.js'

const REFUSAL = 'the prompt has 600 tokens but the context holds 512.'
const CRASH = 'the model crashed.'

/**
 * The chat and completion routes of a model that echoes each prompt, refuses "too long" with a 400 before answering,
 * and fails "crash" after a first word; records what it was sent.
 */
async function echoingModel(): Promise<{url: string; asked: Array<{messages?: Array<{role: string; content: string}>; prompt?: string}>; server: Server}> {
  const asked: Array<{messages?: Array<{role: string; content: string}>; prompt?: string}> = []
  const server = createServer((request, response) => {
    let text = ''
    request.on('data', (chunk) => (text += chunk))
    request.on('end', () => {
      const body = JSON.parse(text)
      asked.push(body)
      const prompt: string = body.prompt ?? body.messages.at(-1).content
      if (prompt === 'too long') {
        response.writeHead(400, {'content-type': 'application/json'})
        response.end(JSON.stringify({error: {code: 'invalid_request', message: REFUSAL, param: 'messages', type: 'invalid_request_error'}}))
        return
      }

      const answer = prompt === 'crash' ? 'Half' : `echo: ${prompt}`
      const choice = (content: string) => (body.prompt === undefined ? {delta: {content}, finish_reason: null, index: 0} : {finish_reason: null, index: 0, text: content})
      if (!body.stream) {
        response.writeHead(200, {'content-type': 'application/json'})
        response.end(JSON.stringify({choices: [body.prompt === undefined ? {finish_reason: 'stop', index: 0, message: {content: answer, role: 'assistant'}} : {finish_reason: 'stop', index: 0, text: answer}]}))
        return
      }

      response.writeHead(200, {'content-type': 'text/event-stream'})
      response.write(`data: ${JSON.stringify({choices: [choice(answer)]})}\n\n`)
      if (prompt === 'crash') response.write(`data: ${JSON.stringify({error: {code: 'model_crashed', message: CRASH, type: 'server_error'}})}\n\n`)
      response.end('data: [DONE]\n\n')
    })
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  return {asked, server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`}
}

describe('servicectl chat and generate (real processes)', () => {
  let model: Awaited<ReturnType<typeof echoingModel>>
  const conversations = [
    ['chat', 'Assistant: '],
    ['generate', 'Completion: '],
  ] as const

  before(async () => {
    model = await echoingModel()
  })

  after(() => model?.server.close())

  it('writes no label for an answer that never starts, and exits 1 with the error', async () => {
    for (const [command] of conversations) {
      for (const stream of ['--stream', '--no-stream']) {
        const {exitCode, stderr, stdout} = await servicectl([command, '-u', 'm', stream, '-e', model.url], {input: 'too long\n'})
        expect(exitCode, `${command} ${stream}`).to.equal(1)
        expect(stdout, `${command} ${stream}`).to.equal('')
        expect(stderr, `${command} ${stream}`).to.equal(`Error: ${REFUSAL}`)
      }
    }
  })

  it('ends the line of an answer that fails midway, so that the error is a line of its own', async () => {
    for (const [command, label] of conversations) {
      const {exitCode, stderr, stdout} = await execa('node', [SERVICECTL, command, '-u', 'm', '-e', model.url], {input: 'crash\n', reject: false, stripFinalNewline: false})
      expect(exitCode, command).to.equal(1)
      expect(stdout, command).to.equal(`${label}Half\n`)
      expect(stderr, command).to.equal(`Error: ${CRASH}\n`)
    }
  })

  it("fails, without a label, when a web server's page answers instead of the service", async () => {
    const page = createServer((request, response) => {
      request.resume()
      response.writeHead(200, {'content-type': 'text/html'})
      response.end('<!DOCTYPE HTML>\n<html><body>Hello</body></html>\n')
    })
    page.listen(0, '127.0.0.1')
    await once(page, 'listening')
    const url = `http://127.0.0.1:${(page.address() as AddressInfo).port}`
    try {
      for (const [command] of conversations) {
        for (const stream of ['--stream', '--no-stream']) {
          const {exitCode, stderr, stdout} = await servicectl([command, '-u', 'm', stream, '-e', url], {input: 'Hello\n'})
          const path = command === 'chat' ? '/v1/chat/completions' : '/v1/completions'
          expect(exitCode, `${command} ${stream}`).to.equal(1)
          expect(stdout, `${command} ${stream}`).to.equal('')
          expect(stderr, `${command} ${stream}`).to.equal(
            `Error: the server at ${url} is not the service: it answered POST ${path} with 200 OK (text/html); point to the service with --endpoint or SERVICE_ENDPOINT.`,
          )
        }
      }
    } finally {
      page.close()
    }
  })
})
