/**
 * One SERVICE_HOME, one service: real `service-local`, `service-supervisor` and `service-worker` processes
 * started on one home, as two people on one machine might, and restarted after a clean stop and a SIGKILL.
 */
import {expect} from 'chai'
import {execa} from 'execa'
import {readdir} from 'node:fs/promises'
import {join} from 'node:path'

import {callApi, ROOT, type RunningService, startProgram, startService, temporaryDirectory} from '../helpers/service.js'

/** Starts a program that is expected to be refused; its exit code and what it printed. */
async function refusedStart(program: string, args: string[], home: string) {
  const result = await execa('node', [join(ROOT, 'bin', `${program}.js`), ...args], {env: {SERVICE_HOME: home}, reject: false, timeout: 30_000})
  return {exitCode: result.exitCode, stderr: result.stderr, stdout: result.stdout}
}

const inUse = (program: string, home: string, holder: RunningService, holderProgram: string) =>
  `${program}: SERVICE_HOME ${home} is in use by ${holderProgram} (pid ${holder.process.pid}, ${holder.url}); stop that service first, or give this one a folder of its own with SERVICE_HOME=<folder>.`

describe('one service per SERVICE_HOME (real processes)', function () {
  this.timeout(120_000)
  const running: RunningService[] = []
  const start = async (...args: Parameters<typeof startProgram>) => {
    const service = await startProgram(...args)
    running.push(service)
    return service
  }

  afterEach(async () => {
    // stop() of a service that already exited (the one killed with SIGKILL) finds nothing to stop.
    for (const service of running.splice(0)) await service.stop()
  })

  it('refuses a second service of any kind beside service-local, in one line naming the holder, and the first keeps serving', async () => {
    const home = await temporaryDirectory()
    const local = await start('service-local', ['--port', '0'], {home})
    const second: Array<[string, string[]]> = [
      ['service-local', ['--port', '0']],
      ['service-supervisor', ['-H', '127.0.0.1', '-p', '0']],
      ['service-worker', ['-e', local.url, '-H', '127.0.0.1']],
    ]
    for (const [program, args] of second) {
      const refused = await refusedStart(program, args, home)
      expect(refused, program).to.deep.equal({exitCode: 1, stderr: inUse(program, home, local, 'service-local'), stdout: ''})
    }

    expect((await callApi(local, 'GET', '/v1/models')).status).to.equal(200)
  })

  it('starts again on the home once the service there stopped, or was killed with SIGKILL', async () => {
    const home = await temporaryDirectory()
    const first = await startService({home})
    await first.stop()
    const second = await start('service-local', ['--port', '0'], {home})
    second.process.kill('SIGKILL')
    await second.process
    const third = await start('service-local', ['--port', '0'], {home})
    expect(third.output()).to.contain(`service-local: SERVICE_HOME ${home} was left locked by service-local (pid ${second.process.pid}), which no longer runs; waiting`)
    expect((await callApi(third, 'GET', '/v1/models')).status).to.equal(200)
  })

  it('releases its locks on a clean SIGTERM after running a model, so the next start takes the home at once', async () => {
    const home = await temporaryDirectory()
    const first = await startService({home})
    const launched = await callApi(first, 'POST', '/v1/models', {model_engine: 'llama.cpp', model_name: 'tiny-random-llm'})
    expect(launched.status, JSON.stringify(launched.body)).to.equal(200)
    await first.stop()
    expect((await readdir(join(home, 'locks'))).filter((name) => name.endsWith('.lock'))).to.deep.equal([])
    const second = await start('service-local', ['--port', '0'], {home})
    expect(second.output()).to.not.contain('was left locked')
    expect((await callApi(second, 'GET', '/v1/models')).status).to.equal(200)
  })

  it('lets one supervisor and one worker share a home, as on one machine, but not two of either', async () => {
    const home = await temporaryDirectory()
    const supervisor = await start('service-supervisor', ['-H', '127.0.0.1', '-p', '0'], {home})
    const worker = await start('service-worker', ['-e', supervisor.url, '-H', '127.0.0.1'], {home})
    expect((await callApi(supervisor, 'GET', '/v1/cluster/workers')).body.list.map((w: {address: string}) => w.address)).to.deep.equal([worker.url])

    const secondSupervisor = await refusedStart('service-supervisor', ['-H', '127.0.0.1', '-p', '0'], home)
    expect(secondSupervisor.stderr).to.equal(inUse('service-supervisor', home, supervisor, 'service-supervisor'))
    const secondWorker = await refusedStart('service-worker', ['-e', supervisor.url, '-H', '127.0.0.1'], home)
    expect(secondWorker.stderr).to.equal(inUse('service-worker', home, worker, 'service-worker'))
    const local = await refusedStart('service-local', ['--port', '0'], home)
    expect(local.stderr).to.equal(inUse('service-local', home, supervisor, 'service-supervisor'))
  })
})
