/**
 * A model process that ends while requests use it. One whose IPC channel has closed but which has not exited yet:
 * a request sent to it then fails with the exit's 503 once the process is gone, not with the IPC library's error as
 * a 500. One terminated while a request streams from it: the request ends with a 503 that says so, not with the
 * engine's own error about its freed model (which the service would show as an internal error).
 */
import {expect} from 'chai'
import {mkdtemp, rm} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import {join, resolve} from 'node:path'
import {setTimeout as delay} from 'node:timers/promises'

import {ServiceError} from '../../src/kernel/errors.js'
import {InstanceProcess, instanceSpawner} from '../../src/model-process/instance-process.js'

const HOST = resolve(import.meta.dirname, '../fixtures/ending-host/host.js')

describe('model process ending during requests', function () {
  this.timeout(30_000)
  let directory: string
  const loaded = async (uid: string) => {
    const instance = new InstanceProcess(uid, await instanceSpawner(), {logFile: join(directory, `${uid}.log`)})
    await instance.load(HOST, {} as never)
    return instance
  }

  before(async () => {
    directory = await mkdtemp(join(tmpdir(), 'instance-ends-'))
  })
  after(() => rm(directory, {force: true, recursive: true}))

  it('fails a request sent between its channel closing and its exit with the exit, as a 503', async () => {
    const instance = await loaded('disconnecting')
    const first = drain(instance.invoke('disconnect', {}, new AbortController().signal))
    await delay(300)
    const second = await drain(instance.invoke('disconnect', {}, new AbortController().signal))
    expect(second).to.be.instanceOf(ServiceError)
    expect((second as ServiceError).status).to.equal(503)
    expect(await first).to.be.instanceOf(ServiceError)
    await instance.dispose()
  })

  it('ends a request streaming while it is terminated with a 503 naming the termination, after the events before it', async () => {
    const instance = await loaded('counting')
    const received: unknown[] = []
    let disposed: Promise<void> | undefined
    const failure = await drain(instance.invoke('count', {}, new AbortController().signal), (event) => {
      received.push(event)
      if (received.length === 3) disposed = instance.dispose()
    })
    await disposed
    expect(received.slice(0, 3)).to.deep.equal([0, 1, 2])
    expect(failure).to.be.instanceOf(ServiceError)
    expect((failure as ServiceError).status).to.equal(503)
    expect((failure as ServiceError).message).to.equal('model counting was terminated while this request was running.')
  })
})

/** Reads the events to the end; the error that ended them, if one did. */
async function drain(events: AsyncIterable<unknown>, onEvent: (event: unknown) => void = () => {}): Promise<unknown> {
  try {
    for await (const event of events) onEvent(event)
    return undefined
  } catch (error) {
    return error
  }
}
