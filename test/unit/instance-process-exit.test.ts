/**
 * A model process whose IPC channel has closed but which has not exited yet: a request sent to it then fails with the
 * exit's 503 once the process is gone, not with the IPC library's error as a 500.
 */
import {expect} from 'chai'
import {mkdtemp, rm} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import {join, resolve} from 'node:path'
import {setTimeout as delay} from 'node:timers/promises'

import {ServiceError} from '../../src/kernel/errors.js'
import {InstanceProcess, instanceSpawner} from '../../src/model-process/instance-process.js'

const HOST = resolve(import.meta.dirname, '../fixtures/disconnecting-host/host.js')

describe('model process between its channel closing and its exit', function () {
  this.timeout(30_000)
  let directory: string

  before(async () => {
    directory = await mkdtemp(join(tmpdir(), 'instance-exit-'))
  })
  after(() => rm(directory, {force: true, recursive: true}))

  it('fails a request sent then with the exit, as a 503', async () => {
    const instance = new InstanceProcess('disconnecting', await instanceSpawner(), {logFile: join(directory, 'model.log')})
    await instance.load(HOST, {} as never)
    const first = drain(instance.invoke('disconnect', {}, new AbortController().signal))
    await delay(300)
    const second = await drain(instance.invoke('disconnect', {}, new AbortController().signal))
    expect(second).to.be.instanceOf(ServiceError)
    expect((second as ServiceError).status).to.equal(503)
    expect(await first).to.be.instanceOf(ServiceError)
    await instance.dispose()
  })
})

async function drain(events: AsyncIterable<unknown>): Promise<unknown> {
  try {
    for await (const _ of events) continue
    return undefined
  } catch (error) {
    return error
  }
}
