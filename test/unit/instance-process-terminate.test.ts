/**
 * A model terminated while a request streams from it: the request ends with a 503 that says the model was terminated,
 * not with the engine's own error about its freed model (which the service would show as an internal error).
 */
import {expect} from 'chai'
import {mkdtemp, rm} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import {join, resolve} from 'node:path'

import {ServiceError} from '../../src/kernel/errors.js'
import {InstanceProcess, instanceSpawner} from '../../src/model-process/instance-process.js'

const HOST = resolve(import.meta.dirname, '../fixtures/endless-host/host.js')

describe('model process terminated during a request', function () {
  this.timeout(30_000)
  let directory: string

  before(async () => {
    directory = await mkdtemp(join(tmpdir(), 'instance-terminate-'))
  })
  after(() => rm(directory, {force: true, recursive: true}))

  it('ends the request with a 503 naming the termination, after the events that came before it', async () => {
    const instance = new InstanceProcess('counting', await instanceSpawner(), {logFile: join(directory, 'model.log')})
    await instance.load(HOST, {} as never)
    const received: unknown[] = []
    let disposed: Promise<void> | undefined
    let failure: unknown
    try {
      for await (const event of instance.invoke('count', {}, new AbortController().signal)) {
        received.push(event)
        if (received.length === 3) disposed = instance.dispose()
      }
    } catch (error) {
      failure = error
    }

    await disposed
    expect(received.slice(0, 3)).to.deep.equal([0, 1, 2])
    expect(failure).to.be.instanceOf(ServiceError)
    expect((failure as ServiceError).status).to.equal(503)
    expect((failure as ServiceError).message).to.equal('model counting was terminated while this request was running.')
  })
})
