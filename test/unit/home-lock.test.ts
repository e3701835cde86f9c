/**
 * The home lock's refusals, in process: what a second service is told about a holder the record names on
 * another machine, or does not name at all. Real processes, stale locks and roles: test/e2e/home-lock.test.ts.
 */
import {expect} from 'chai'
import {mkdir, rm, utimes, writeFile} from 'node:fs/promises'
import {hostname} from 'node:os'
import {join} from 'node:path'

import {lockHome} from '../../src/util/home-lock.js'
import {temporaryDirectory} from '../helpers/service.js'

describe('home lock', () => {
  const refusal = (promise: Promise<unknown>) => promise.then(() => expect.fail('the lock was taken twice'), (error) => error)

  it('names a holder on another machine by its host, and refuses at once even when no such pid runs here', async () => {
    const home = await temporaryDirectory()
    const held = await lockHome(home, ['worker'], {program: 'service-worker'})
    await writeFile(join(home, 'locks/worker.json'), JSON.stringify({endpoint: 'http://10.0.0.2:30001', host: 'gpu-box', pid: 4242, program: 'service-worker'}))
    const error = await refusal(lockHome(home, ['worker'], {isRunning: () => false, notify: () => expect.fail('waited'), program: 'service-local'}))
    expect(error).to.include({
      code: 'conflict',
      message: `SERVICE_HOME ${home} is in use by service-worker (pid 4242, on gpu-box, http://10.0.0.2:30001); stop that service first, or give this one a folder of its own with SERVICE_HOME=<folder>.`,
      status: 409,
    })
    await held.release()
  })

  it('says "another service" when the holder left no record, and keeps none of the locks it took before the refusal', async () => {
    const home = await temporaryDirectory()
    const held = await lockHome(home, ['worker'], {program: 'service-worker'})
    await rm(join(home, 'locks/worker.json'))
    const error = await refusal(lockHome(home, ['supervisor', 'worker'], {program: 'service-local'}))
    expect(error.message).to.match(/is in use by another service; stop that service first/)
    const supervisor = await lockHome(home, ['supervisor'], {program: 'service-supervisor'})
    await Promise.all([supervisor.release(), held.release()])
  })

  it('waits for a lock whose record names this very process (a restarted container\'s pid 1) to go stale, instead of refusing', async () => {
    const home = await temporaryDirectory()
    await mkdir(join(home, 'locks/worker.lock'), {recursive: true})
    await writeFile(join(home, 'locks/worker.json'), JSON.stringify({host: hostname(), pid: process.pid, program: 'service-local'}))
    // Refreshed 8 s ago by the earlier run: stale (10 s) within the wait.
    const refreshed = new Date(Date.now() - 8000)
    await utimes(join(home, 'locks/worker.lock'), refreshed, refreshed)
    const notices: string[] = []
    const lock = await lockHome(home, ['worker'], {isRunning: () => true, notify: (message) => notices.push(message), program: 'service-local'})
    expect(notices.join('\n')).to.contain(`was left locked by service-local (pid ${process.pid}), which no longer runs`)
    await lock.release()
  })
})
