/**
 * A model process's channel decodes each message recursively (V8's serializer), and a message nested some 1,700 levels
 * deep overflows the receiving process's stack outside any request's code, killing the process (issue 32, item 3). A
 * payload or an answer nested past CHANNEL_NESTING fails its own request instead, through the real channel of a real
 * model process, and the process goes on serving.
 */
import {expect} from 'chai'
import {mkdtemp, rm} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import {join, resolve} from 'node:path'
import v8 from 'node:v8'

import {ServiceError} from '../../src/kernel/errors.js'
import {InstanceProcess, instanceSpawner} from '../../src/model-process/instance-process.js'
import {CHANNEL_NESTING} from '../../src/model-process/messages.js'

const HOST = resolve(import.meta.dirname, '../fixtures/deep-host/host.js')

const nested = (depth: number) => {
  let value: Record<string, unknown> = {}
  for (let level = 1; level < depth; level++) value = {a: value}
  return value
}

async function collect(events: AsyncIterable<unknown>): Promise<{events: unknown[]; error?: ServiceError}> {
  const received: unknown[] = []
  try {
    for await (const event of events) received.push(event)
    return {events: received}
  } catch (error) {
    return {error: error as ServiceError, events: received}
  }
}

describe('model process channel nesting', function () {
  this.timeout(30_000)
  let directory: string
  let instance: InstanceProcess
  const run = (operation: string, payload: unknown) => collect(instance.invoke(operation, payload, new AbortController().signal))

  before(async () => {
    directory = await mkdtemp(join(tmpdir(), 'channel-nesting-'))
    instance = new InstanceProcess('deep', await instanceSpawner(), {logFile: join(directory, 'deep.log')})
    await instance.load(HOST, {} as never)
  })
  after(async () => {
    await instance.dispose()
    await rm(directory, {force: true, recursive: true})
  })

  it('carries a value nested CHANNEL_NESTING deep, which the channel decodes well within its stack', async () => {
    expect(() => v8.deserialize(v8.serialize({payload: nested(3 * CHANNEL_NESTING)}))).not.to.throw()
    expect(await run('echo', nested(CHANNEL_NESTING))).to.deep.equal({events: [CHANNEL_NESTING]})
    expect(await run('deep', {depth: CHANNEL_NESTING})).to.deep.equal({events: [nested(CHANNEL_NESTING)]})
  })

  it('fails a payload nested 3,000 deep with a 400 before sending it, and the process serves the next request', async () => {
    expect(() => v8.deserialize(v8.serialize(nested(3000)))).to.throw(RangeError)
    const {error} = await run('echo', nested(3000))
    expect(error).to.be.instanceOf(ServiceError)
    expect(error).to.include({status: 400})
    expect(error!.message).to.equal(`the request nests more than ${CHANNEL_NESTING} levels deep, more than a model process's channel carries.`)
    expect(await run('echo', {a: 1})).to.deep.equal({events: [1]})
    expect(instance.state).to.equal('ready')
  })

  it("fails an engine's answer nested 3,000 deep with a 500 for that request alone", async () => {
    const {error, events} = await run('deep', {depth: 3000})
    expect(events).to.deep.equal([])
    expect(error).to.include({status: 500})
    expect(error!.message).to.include(`nests more than ${CHANNEL_NESTING} levels deep`)
    expect(await run('echo', [[1]])).to.deep.equal({events: [2]})
    expect(instance.state).to.equal('ready')
  })
})
