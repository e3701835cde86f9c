import {expect} from 'chai'

import {SequencePool} from '../../plugins/engine-llama-cpp/src/sequence-pool.js'

describe('sequence pool', () => {
  it('leases the free sequence that holds most of the prompt, else the first in its order', async () => {
    const pool = new SequencePool(['a', 'b', 'c'])
    const held: Record<string, number> = {a: 0, b: 7, c: 3}
    expect(await pool.acquire(undefined, (slot) => held[slot])).to.equal('b')
    expect(await pool.acquire()).to.equal('a')
    pool.release('b')
    expect(await pool.acquire(undefined, () => 0)).to.equal('b')
    pool.release('a')
    expect(await pool.acquire()).to.equal('a')
  })

  it('queues requests beyond its size in order, and drops a waiter whose request is aborted', async () => {
    const pool = new SequencePool(['only'])
    const first = await pool.acquire()
    const controller = new AbortController()
    const abandoned = pool.acquire(controller.signal)
    const next = pool.acquire()
    controller.abort(new Error('client went away'))
    expect(await abandoned.catch((error: Error) => error.message)).to.equal('client went away')
    pool.release(first)
    expect(await next).to.equal('only')
    const gone = await pool.acquire(AbortSignal.abort(new Error('left before asking'))).catch((error: Error) => error.message)
    expect([gone, pool.usage().requestsWaiting], 'an aborted request does not queue').to.deep.equal(['left before asking', 0])
  })

  it('reports its sequences in use and the requests waiting, for the metrics', async () => {
    const pool = new SequencePool(['a', 'b'])
    expect(pool.usage()).to.deep.equal({requestsWaiting: 0, sequencesInUse: 0, sequencesTotal: 2})
    const leased = [await pool.acquire(), await pool.acquire()]
    const waiting = [pool.acquire(), pool.acquire()]
    expect(pool.usage()).to.deep.equal({requestsWaiting: 2, sequencesInUse: 2, sequencesTotal: 2})
    pool.release(leased[0])
    expect(pool.usage()).to.deep.equal({requestsWaiting: 1, sequencesInUse: 2, sequencesTotal: 2})
    pool.release(leased[1])
    for (const slot of await Promise.all(waiting)) pool.release(slot)
    expect(pool.usage()).to.deep.equal({requestsWaiting: 0, sequencesInUse: 0, sequencesTotal: 2})
  })
})
