/**
 * The port race of an external engine's program: the port the kernel picks is free when picked, but another process
 * may bind it before the program does. Real programs (node, started by the real spawner) on a port a server already
 * holds: the program exits saying its address is in use, and the launch starts it again on a fresh port; a program
 * that fails for another reason is not started again, and a port taken every time fails the launch after three tries.
 * A program slow to bind (as a Python one importing torch) whose port another process answers the health check on is
 * not taken as ready: it is stopped and started again on a fresh port.
 */
import {expect} from 'chai'
import {createServer, type Server} from 'node:http'
import {join} from 'node:path'

import type {LoadRequest} from '../../src/kernel/contracts.js'
import type {ExternalEngine} from '../../src/kernel/external-engine.js'

import {ExternalProgram} from '../../src/model-process/external-program.js'
import {listenerIsInGroup} from '../../src/model-process/listener-owner.js'
import {programSpawner, type SpawnProgram} from '../../src/model-process/program-spawner.js'
import {temporaryDirectory} from '../helpers/service.js'

const request = {family: {} as never, modelName: 'm', modelPath: '/weights', modelType: 'LLM', modelUid: 'm-1', parameters: {}, spec: {} as never} as LoadRequest

/**
 * Serves GET /health on the port it is given; `fail` exits at once instead, as a program that cannot load would;
 * `slow` binds after 1.5 s, as a program importing its libraries first does.
 */
const PROGRAM = `
if (process.argv[2] === 'fail') { console.error('cannot load the model'); process.exit(3) }
const serve = () => require('node:http').createServer((request, response) => response.end('ok')).listen(Number(process.argv[1]), '127.0.0.1')
setTimeout(serve, process.argv[2] === 'slow' ? 1500 : 0)
`

/** Whether process `pid` still runs. */
function running(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

describe('ExternalProgram: a port taken before the program binds it', function () {
  this.timeout(30_000)
  let holder: Server
  let taken: number
  /** Another program's server, answering GET /health with success. */
  let impostor: Server
  let answered: number
  let logFile: string

  before(async () => {
    holder = createServer((request, response) => {
      response.statusCode = 503
      response.end('not the program')
    })
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve))
    taken = (holder.address() as {port: number}).port
    impostor = createServer((request, response) => response.end('another program'))
    await new Promise<void>((resolve) => impostor.listen(0, '127.0.0.1', resolve))
    answered = (impostor.address() as {port: number}).port
    logFile = join(await temporaryDirectory('service-port-race-'), 'program.log')
  })

  after(() => {
    for (const server of [holder, impostor]) {
      server?.closeAllConnections()
      server?.close()
    }
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

  /** `port` (the taken one unless given) the first `times`, then whatever get-port finds. */
  const takenFirst = (times = 1, port = taken) => {
    let calls = 0
    return async () => (calls++ < times ? port : (await import('get-port')).default({host: '127.0.0.1'}))
  }

  /** The real spawner, keeping the pid of each program it starts. */
  async function spawnerKeepingPids() {
    const spawn = await programSpawner()
    const pids: number[] = []
    const keeping: SpawnProgram = (options) => {
      const program = spawn(options)
      pids.push(program.pid!)
      return program
    }

    return {pids, spawn: keeping}
  }

  it('does not take another process answering the health check for the program, and starts it on a fresh port', async () => {
    const {definition, ports} = engine('slow')
    const {pids, spawn} = await spawnerKeepingPids()
    const program = new ExternalProgram('m-1', definition, {freePort: takenFirst(1, answered), listenerInGroup: listenerIsInGroup, logFile, spawn})
    try {
      await program.load(request)
      expect(program.state).to.equal('ready')
      expect(ports).to.have.length(2)
      expect(ports[0]).to.equal(answered)
      expect(running(pids[0]), 'the program given up on still runs').to.equal(false)
      expect(await (await fetch(`http://127.0.0.1:${ports[1]}/health`)).text()).to.equal('ok')
    } finally {
      await program.dispose()
    }
  })

  it('gives up after three ports answered by another process, stopping each program', async () => {
    const {definition, ports} = engine('slow')
    const {pids, spawn} = await spawnerKeepingPids()
    const program = new ExternalProgram('m-1', definition, {freePort: takenFirst(3, answered), listenerInGroup: listenerIsInGroup, logFile, spawn})
    const failure = await program.load(request).then(
      () => expect.fail('the launch succeeded'),
      (error: Error) => error,
    )
    expect(ports).to.deep.equal([answered, answered, answered])
    expect(failure.message).to.match(/port \d+ was taken by another process, which answered its health check; 3 ports were tried/)
    expect(pids.filter((pid) => running(pid))).to.deep.equal([])
  })

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
