/**
 * The background build of a service killed with SIGKILL while it builds, seen from another service on the machine:
 * real `service-local` processes with the engine-stand-in-build fixture plugin (its build program compiles nothing
 * and ends when the test says). The other service reports the build as building while the holder's lock is
 * refreshed, then as failed, saying why, once the lock has gone stale (proper-lockfile's 10 s); the next service to
 * start takes the build over.
 */
import {expect} from 'chai'
import {mkdtemp, readFile, rm, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import {callApi, ROOT, type RunningService, servicectl, startService, temporaryDirectory} from '../helpers/service.js'

const FIXTURE = join(ROOT, 'test/fixtures/plugins/engine-stand-in-build')
const ROUTE = '/v1/engines/stand-in-build/build'

describe('background engine build of a service killed while it builds (stand-in build program)', function () {
  this.timeout(120_000)
  let work: string
  const services: RunningService[] = []

  async function serviceFor(folder: string): Promise<RunningService> {
    const home = await mkdtemp(join(work, 'home-'))
    const linked = await servicectl(['plugins', 'link', FIXTURE, '--no-install'], {env: {SERVICE_HOME: home}})
    expect(linked.exitCode, linked.stderr).to.equal(0)
    const service = await startService({env: {SERVICE_AUTO_BUILD: 'stand-in-build', STAND_IN_BUILD_FOLDER: folder}, home})
    services.push(service)
    return service
  }

  /** Asks until the build's status satisfies `check`; the test's timeout bounds it. */
  async function until(service: RunningService, check: (body: any) => boolean): Promise<any> {
    for (;;) {
      const {body} = await callApi(service, 'GET', ROUTE)
      if (check(body)) return body
      await new Promise((resolve) => setTimeout(resolve, 200))
    }
  }

  before(async () => {
    work = await temporaryDirectory('service-auto-build-killed-')
  })

  after(async () => {
    // Every one, the killed one too (stopping an ended service only waits for its end): execa's subprocess has no
    // exitCode to ask, and a service left running keeps the test run from exiting.
    await Promise.allSettled(services.map((service) => service.stop()))
    await rm(work, {force: true, recursive: true})
  })

  it('is reported failed by the other services once the lock shows its holder is gone, and the next start builds again', async () => {
    const folder = join(work, 'build')
    const first = await serviceFor(folder)
    const building = await until(first, (body) => body.percent === 50)
    const second = await serviceFor(folder)
    expect(await until(second, (body) => body.pid === building.pid)).to.deep.include({state: 'building'})

    first.process.kill('SIGKILL')
    await first.process.catch(() => {})
    const failed = await until(second, (body) => body.state === 'failed')
    expect(failed.error).to.equal(
      'the service on this machine that held the build lock stopped before the build ended; the next service to start here builds it again (or `servicectl engine build stand-in-build`).',
    )
    expect(failed).to.deep.include({log_file: building.log_file, percent: 50})
    expect(failed.pid).to.equal(undefined)

    const third = await serviceFor(folder)
    // The new build is asked for again until its stand-in has printed its progress: a build starts without a percent.
    const again = await until(third, (body) => body.state === 'building' && body.pid !== building.pid && body.percent !== undefined)
    expect(again.percent).to.equal(50)
    // Both stand-ins end: the killed service's, left running in its own process group, and the new one.
    await writeFile(join(folder, 'finish'), '0')
    expect((await until(third, (body) => body.state === 'succeeded')).binaries).to.equal('Models launched now use the stand-in build.')
    expect((await until(second, (body) => body.state === 'succeeded')).binaries, 'the other service reads the new holder\'s status').to.equal('Models launched now use the stand-in build.')
    expect((await readFile(join(folder, 'ran'), 'utf8')).split('\n').filter(Boolean)).to.deep.equal(['probe', 'build', 'probe', 'build'])
  })
})
