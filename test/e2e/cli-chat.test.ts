/**
 * `servicectl chat` and `generate` as real processes, against a stand-in for the service whose answers each test
 * chooses: a refusal before the answer, a failure in the middle of it, a web server's page instead of the service.
 */
import {expect} from 'chai'
import {execa} from 'execa'
import {once} from 'node:events'
import {createServer, type Server} from 'node:http'
import type {AddressInfo} from 'node:net'

import {SERVICECTL, servicectl, temporaryDirectory} from '../helpers/service.js'
import {closeTerminals, startTerminal} from '../helpers/terminal.js'

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
  it('with piped lines, stops at the first failure and exits 1; --json keeps the turns before it beside the error', async () => {
    const error = {code: 'invalid_request', message: REFUSAL, status: 400}
    const before = model.asked.length
    const chat = await servicectl(['chat', '-u', 'm', '--json', '-e', model.url], {input: 'hello\ntoo long\nnever asked\n'})
    expect(chat.exitCode).to.equal(1)
    expect(JSON.parse(chat.stdout)).to.deep.equal({error, messages: [{content: 'hello', role: 'user'}, {content: 'echo: hello', role: 'assistant'}]})
    expect(chat.stderr).to.equal(`Assistant: echo: hello\nError: ${REFUSAL}`)
    const generate = await servicectl(['generate', '-u', 'm', '--json', '-e', model.url], {input: 'hello\ntoo long\nnever asked\n'})
    expect(generate.exitCode).to.equal(1)
    expect(JSON.parse(generate.stdout)).to.deep.equal({completions: [{completion: 'echo: hello', prompt: 'hello'}], error})
    expect(model.asked.slice(before).map((body) => body.prompt ?? body.messages!.at(-1)!.content)).to.deep.equal(['hello', 'too long', 'hello', 'too long'])
  })

  describe('on a terminal', () => {
    after(closeTerminals)

    it('shows the error of a failed turn and goes on without it, as Ollama does', async () => {
      const terminal = await startTerminal([process.execPath, SERVICECTL, 'chat', '-u', 'm', '-e', model.url], {SERVICE_HOME: await temporaryDirectory()})
      const ask = async (line: string, shown: RegExp) => {
        await terminal.waitForRow(/^User:$/)
        await terminal.type(line)
        await terminal.press('Enter')
        await terminal.waitForRow(shown)
      }

      await ask('hello', /^Assistant: echo: hello$/)
      await ask('too long', new RegExp(`^Error: ${REFUSAL.replaceAll('.', '\\.')}$`))
      await ask('crash', new RegExp(`^Error: ${CRASH.replaceAll('.', '\\.')}$`))
      const before = model.asked.length
      await ask('again', /^Assistant: echo: again$/)
      // The failed turns are left out of the conversation the model is sent.
      const roles = model.asked[before].messages!.map(({content, role}) => `${role}: ${content}`)
      expect(roles).to.deep.equal(['user: hello', 'assistant: echo: hello', 'user: again'])
      expect((await terminal.screen()).filter((row) => row === 'Assistant: Half')).to.have.length(1)
      await terminal.waitForRow(/^User:$/)
      await terminal.press('Enter')
      expect(await terminal.exited()).to.equal(0)
    })
  })
})
