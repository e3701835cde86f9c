/**
 * The port race of an external engine's program: the port the kernel picks is free when picked, but another process
 * may bind it before the program does. Real programs (node, started by the real spawner) on a port a server already
 * holds: the program exits saying its address is in use, and the launch starts it again on a fresh port; a program
 * that fails for another reason is not started again, and a port taken every time fails the launch after three tries.
 */
import {expect} from 'chai'
import {createServer, type Server} from 'node:http'
import {join} from 'node:path'

import type {LoadRequest} from '../../src/kernel/contracts.js'
import type {ExternalEngine} from '../../src/kernel/external-engine.js'

import {ExternalProgram} from '../../src/model-process/external-program.js'
import {programSpawner} from '../../src/model-process/program-spawner.js'
import {temporaryDirectory} from '../helpers/service.js'

const request = {family: {} as never, modelName: 'm', modelPath: '/weights', modelType: 'LLM', modelUid: 'm-1', parameters: {}, spec: {} as never} as LoadRequest

/** Serves GET /health on the port it is given; `fail` exits at once instead, as a program that cannot load would. */
const PROGRAM = `
if (process.argv[2] === 'fail') { console.error('cannot load the model'); process.exit(3) }
require('node:http').createServer((request, response) => response.end('ok')).listen(Number(process.argv[1]), '127.0.0.1')
`

describe('ExternalProgram: a port taken before the program binds it', function () {
  this.timeout(30_000)
  let holder: Server
  let taken: number
  let logFile: string

  before(async () => {
    holder = createServer((request, response) => {
      response.statusCode = 503
      response.end('not the program')
    })
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve))
    taken = (holder.address() as {port: number}).port
    logFile = join(await temporaryDirectory('service-port-race-'), 'program.log')
  })

  after(() => {
    holder?.closeAllConnections()
    holder?.close()
  })

  /** An engine running PROGRAM on the port it is given; the ports it was given, in order. */
  function engine(mode = 'serve') {
    const ports: number[] = []
    const definition: ExternalEngine = {
      command: (_, {port}) => {
        ports.push(port)
        return {args: ['-e', PROGRAM, String(port), mode], file: process.execPath}
      },
      health: {intervalMs: 50, path: '/health', timeoutMs: 10_000},
      operations: {},
    }
    return {definition, ports}
  }

  /** The taken port first, then whatever get-port finds. */
  const takenFirst = (times = 1) => {
    let calls = 0
    return async () => (calls++ < times ? taken : (await import('get-port')).default({host: '127.0.0.1'}))
  }

  it('starts the program again on a fresh port when its port was taken, and serves', async () => {
    const {definition, ports} = engine()
    const program = new ExternalProgram('m-1', definition, {freePort: takenFirst(), logFile, spawn: await programSpawner()})
    try {
      await program.load(request)
      expect(program.state).to.equal('ready')
      expect(ports).to.have.length(2)
      expect(ports[0]).to.equal(taken)
      expect(ports[1]).to.not.equal(taken)
      expect(await (await fetch(`http://127.0.0.1:${ports[1]}/health`)).text()).to.equal('ok')
    } finally {
      await program.dispose()
    }
  })

  it('gives up after three ports taken, saying so', async () => {
    const {definition, ports} = engine()
    const program = new ExternalProgram('m-1', definition, {freePort: takenFirst(3), logFile, spawn: await programSpawner()})
    const failure = await program.load(request).then(
      () => expect.fail('the launch succeeded'),
      (error: Error) => error,
    )
    expect(ports).to.deep.equal([taken, taken, taken])
    expect(failure.message).to.match(/exited with code 1 before it was ready \(its port was taken\); its output is in the model's log/)
  })

  it('does not start again a program that failed for another reason', async () => {
    const {definition, ports} = engine('fail')
    const program = new ExternalProgram('m-1', definition, {freePort: takenFirst(0), logFile, spawn: await programSpawner()})
    const failure = await program.load(request).then(
      () => expect.fail('the launch succeeded'),
      (error: Error) => error,
    )
    expect(ports).to.have.length(1)
    expect(failure.message).to.match(/exited with code 3 before it was ready; its output is in the model's log/)
  })
})
