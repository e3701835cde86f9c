/**
 * A model crash's message goes to every client with a request in flight (and onto the model's status), so it quotes
 * none of the output: that can hold anything the process read (issue 32, item 4), and the model's log lines about
 * requests carry other clients' request ids and token counts. It names a cause recognised in the process's own lines
 * and where its output is; the service's log gets every line. Both kinds of model: a Node model process
 * (InstanceProcess) and an external engine's program (ExternalProgram), each with a stand-in process.
 */
import {expect} from 'chai'
import {createServer, type Server} from 'node:http'

import type {ExternalEngine} from '../../src/kernel/external-engine.js'
import type {FromInstance} from '../../src/model-process/messages.js'

import {ServiceError} from '../../src/kernel/errors.js'
import {ExternalProgram} from '../../src/model-process/external-program.js'
import {InstanceProcess} from '../../src/model-process/instance-process.js'
import {ownLines} from '../../src/model-process/output-log.js'

/** A model's log as it reads when the process dies: request lines of two clients around the process's own error. */
const OUTPUT = [
  '2026-01-01T12:00:00.000Z info  [llama.cpp] request finished: stop prompt_tokens=812 completion_tokens=64 request_id=client-a-secret',
  '{"level":"info","time":"2026-01-01T12:00:00.100Z","name":"llama.cpp","msg":"request started","prompt_tokens":33,"request_id":"client-b-secret"}',
  'GGML_ASSERT(n_tokens <= n_batch) failed',
  '2026-01-01T12:00:00.200Z info  [llama.cpp] request finished: abort completion_tokens=3 request_id=client-b-secret',
  'Aborted (core dumped)',
]
const OWN = ['GGML_ASSERT(n_tokens <= n_batch) failed', 'Aborted (core dumped)']

/** What the crash told the client and the service's log. */
function expectQuotesNoOutput(message: string, report: string) {
  for (const line of OUTPUT) expect(message).to.not.contain(line)
  expect(message).to.not.match(/request_id|client-[ab]-secret|prompt_tokens|GGML_ASSERT|core dumped/)
  for (const line of OUTPUT) expect(report).to.contain(line)
}

describe('a model crash names its cause, not its output', function () {
  this.timeout(10_000)

  it('tells a line about a request, text or JSON, from the process\'s own', () => {
    expect(ownLines(OUTPUT)).to.deep.equal(OWN)
    expect(ownLines(['the request_id field is missing', 'prefix_request_id=1'])).to.deep.equal(['the request_id field is missing', 'prefix_request_id=1'])
  })

  it('a Node model process: the request in flight fails with the cause, the log gets every line', async () => {
    let listener: (message: FromInstance) => void = () => {}
    let exit: (value: {exitCode: number | null; signal: string | null}) => void = () => {}
    const child = {
      connected: true,
      exited: new Promise<{exitCode: number | null; signal: string | null}>((resolve) => (exit = resolve)),
      kill: () => true,
      on: (_event: 'message', receive: (message: FromInstance) => void) => (listener = receive),
      send: () => true,
      stderrTail: () => OUTPUT.join('\n'),
    }
    const reports: Array<[ServiceError, string]> = []
    const instance = new InstanceProcess('m-1', () => child, {logFile: '/dev/null'}, (error, report) => reports.push([error, report]))
    const loaded = instance.load('host.js', {} as never)
    listener({info: {}, operations: ['chat'], type: 'ready'})
    await loaded
    const request = instance.invoke('chat', {}, new AbortController().signal)
    const failed = request.next().then(
      () => expect.fail('the request went on'),
      (error: ServiceError) => error,
    )
    exit({exitCode: null, signal: 'SIGABRT'})
    const error = await failed
    expect(error).to.include({code: 'model_crashed', status: 503})
    expect(error.message).to.equal(
      "model m-1's process was killed by SIGABRT (a llama.cpp assertion failed); its output is in the model's log, logs/models/m-1.log in the service's home (on its worker's machine in a cluster).",
    )
    expect(reports).to.have.length(1)
    expect(reports[0][0].message).to.equal(error.message)
    expectQuotesNoOutput(error.message, reports[0][1])
  })

  describe('an external program', () => {
    let server: Server
    let port: number

    before(async () => {
      server = createServer((_request, response) => response.end('ok'))
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
      port = (server.address() as {port: number}).port
    })

    after(() => server.close())

    it('fails later requests with the cause, and the log gets every line', async () => {
      let exit: (value: {exitCode: number | null; signal: string | null}) => void = () => {}
      const exited = new Promise<{exitCode: number | null; signal: string | null}>((resolve) => (exit = resolve))
      const spawn = () => ({exited, kill: () => {}, outputTail: () => [...OUTPUT], pid: 4242})
      const engine: ExternalEngine = {command: () => ({args: [], file: 'serve-model'}), health: {intervalMs: 10, path: '/health', timeoutMs: 5000}, operations: {chat: async function* () {}}}
      const reports: Array<[ServiceError, string]> = []
      const program = new ExternalProgram('m-2', engine, {freePort: async () => port, logFile: '/dev/null', spawn}, (error, report) => reports.push([error, report]))
      await program.load({} as never)
      exit({exitCode: 134, signal: null})
      await exited
      const error = await program
        .invoke('chat', {}, new AbortController().signal)
        .next()
        .then(
          () => expect.fail('the request went on'),
          (failure: ServiceError) => failure,
        )
      expect(error).to.include({code: 'model_crashed', status: 503})
      expect(error.message).to.match(/^model m-2's program exited with code 134 \(a llama.cpp assertion failed\); its output is in the model's log/)
      expect(reports).to.have.length(1)
      expectQuotesNoOutput(error.message, reports[0][1])
    })
  })
})
