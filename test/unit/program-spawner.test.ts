/**
 * A program that dies while a process it forked lives on (vLLM's engine core, its tensor-parallel workers), started by
 * the real spawner: the worker holds the program's stdout and stderr open, yet the program's exit is seen at its own
 * exit, the worker is killed with its process group, and the crash is reported with the program's last lines, during
 * a launch as after it was ready. The worker sleeps far longer than any test waits, so seeing the exit only once the
 * pipes close would time the test out.
 */
import {expect} from 'chai'
import {readFileSync} from 'node:fs'
import {join} from 'node:path'
import {setTimeout as delay} from 'node:timers/promises'

import type {LoadRequest} from '../../src/kernel/contracts.js'
import type {ExternalEngine} from '../../src/kernel/external-engine.js'
import type {ServiceError} from '../../src/kernel/errors.js'

import {ExternalProgram} from '../../src/model-process/external-program.js'
import {programSpawner, type RunningProgram} from '../../src/model-process/program-spawner.js'
import {temporaryDirectory} from '../helpers/service.js'

const request = {family: {} as never, modelName: 'm', modelPath: '/weights', modelType: 'LLM', modelUid: 'm-1', parameters: {}, spec: {} as never} as LoadRequest

/**
 * Forks a worker that inherits its output and sleeps, and says its pid; `fail` then exits with code 3, `serve` serves
 * GET /health on the port it is given and exits with code 4 on GET /crash.
 */
const PROGRAM = `
const worker = require('node:child_process').spawn('sleep', ['600'], {stdio: 'inherit'})
console.log('worker ' + worker.pid)
if (process.argv[2] === 'fail') { console.error('cannot load the model'); process.exit(3) }
require('node:http').createServer((request, response) => {
  if (request.url !== '/crash') return response.end('ok')
  console.error('out of memory')
  process.exit(4)
}).listen(Number(process.argv[1]), '127.0.0.1')
`

/** Whether `pid` runs; a zombie waiting to be reaped by whoever inherited it does not. */
function running(pid: number): boolean {
  try {
    process.kill(pid, 0)
  } catch {
    return false
  }

  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0] !== 'Z'
  } catch {
    return true
  }
}

async function gone(pid: number) {
  while (running(pid)) await delay(50)
}

function workerPid(lines: string[]): number {
  const pid = Number(lines.find((line) => line.startsWith('worker '))?.slice('worker '.length))
  expect(pid, `the worker's pid in ${JSON.stringify(lines)}`).to.be.above(0)
  return pid
}

describe('program spawner: a program that exits while a process it forked lives on', function () {
  this.timeout(30_000)
  let logFile: string

  before(async () => {
    logFile = join(await temporaryDirectory('service-program-spawner-'), 'program.log')
  })

  it('settles `exited` with the exit code of the program itself, with its last lines, and kills the worker', async () => {
    const spawn = await programSpawner()
    const program = spawn({args: ['-e', PROGRAM, '0', 'fail'], env: {}, file: process.execPath, logFile})
    expect(await program.exited).to.deep.equal({exitCode: 3, signal: null})
    expect(program.outputTail()).to.include('cannot load the model')
    await gone(workerPid(program.outputTail()))
  })

  /** An engine running PROGRAM on the port it is given, with a health timeout far beyond the test's. */
  const engine = (mode: string): ExternalEngine => ({
    command: (_, {port}) => ({args: ['-e', PROGRAM, String(port), mode], file: process.execPath}),
    health: {intervalMs: 50, path: '/health', timeoutMs: 600_000},
    operations: {},
  })

  it('fails the launch with the crash, not when the health check gives up, leaving its output to the log', async () => {
    const program = new ExternalProgram('m-1', engine('fail'), {logFile, spawn: await programSpawner()})
    const failure = await program.load(request).then(
      () => expect.fail('the launch succeeded'),
      (error: Error) => error,
    )
    expect(failure.message).to.equal("model m-1's program exited with code 3 before it was ready; its output is in the model's log, logs/models/m-1.log in the service's home (on its worker's machine in a cluster).")
    expect(readFileSync(logFile, 'utf8')).to.contain('cannot load the model')
    expect(program.state).to.equal('crashed')
  })

  it('reports a crash after the program was ready, with the cause its output shows, and stops serving', async () => {
    let crashed: (error: ServiceError) => void = () => {}
    const crash = new Promise<ServiceError>((resolve) => (crashed = resolve))
    const spawn = await programSpawner()
    let running: RunningProgram | undefined
    const port = (await import('get-port')).default({host: '127.0.0.1'})
    const program = new ExternalProgram('m-1', engine('serve'), {freePort: () => port, logFile, spawn: (options) => (running = spawn(options))}, crashed)
    try {
      await program.load(request)
      expect(program.state).to.equal('ready')
      const worker = workerPid(running?.outputTail() ?? [])
      await fetch(`http://127.0.0.1:${await port}/crash`).catch(() => {})
      await fetch(`http://127.0.0.1:${port}/crash`).catch(() => {})
      const failure = await crash
      expect(failure.message).to.match(/^model m-1's program exited with code 4 \(it ran out of memory\); its output is in the model's log/)
      expect(failure.message).to.not.match(/worker \d+/)
      expect(program.state).to.equal('crashed')
      await gone(worker)
    } finally {
      await program.dispose()
    }
  })
})
