import {expect} from 'chai'

import type {WorkerStatus} from '../../src/protocol/worker.js'

import {chooseWorkers, matchesWorker, namedCandidates, noWorkerError, type PlacementCandidate} from '../../src/cluster/placement.js'

const GIB = 1024 ** 3

/** A worker as it reports itself: placement reads nothing else, so no process or machine is involved. */
function candidate(id: string, freeGiB: number, models = 0, address: string | null = `http://${id}:41000`): PlacementCandidate<string> {
  const status: WorkerStatus = {
    address,
    id,
    last_seen: 0,
    resources: {cpu_count: 4, gpus: [], memory_free_bytes: freeGiB * GIB, memory_total_bytes: 64 * GIB},
    state: 'ready',
    version: '0.1.0',
  }
  return {models, status, worker: id}
}

describe('placement', () => {
  it('puts a model on the worker with the fewest models, then the most memory free', () => {
    expect(chooseWorkers([candidate('a', 8, 2), candidate('b', 4, 1), candidate('c', 16, 1)], undefined, 1, 'm')).to.deep.equal(['c'])
  })

  it('spreads replicas over the workers before doubling up on one', () => {
    expect(chooseWorkers([candidate('a', 8), candidate('b', 8, 1)], undefined, 3, 'm')).to.deep.equal(['a', 'b', 'a'])
  })

  it('keeps to the workers with the memory a launch needs, and says what each has when none does', () => {
    expect(chooseWorkers([candidate('a', 2), candidate('b', 6)], 4 * GIB, 1, 'm')).to.deep.equal(['b'])
    expect(() => chooseWorkers([candidate('a', 2), candidate('b', 3)], 4 * GIB, 1, 'm'))
      .to.throw('no worker has the 4.0 GiB m needs: a has 2.0 GiB free; b has 3.0 GiB free')
      .with.property('status', 503)
  })

  it("adds up the memory of a launch's replicas on each worker, placing no more on one than its free memory holds", () => {
    // a holds two 4 GiB replicas and b one: three fit, spread before doubling up.
    expect(chooseWorkers([candidate('a', 9), candidate('b', 5)], 4 * GIB, 3, 'm')).to.deep.equal(['a', 'b', 'a'])
    expect(chooseWorkers([candidate('local', 12)], 4 * GIB, 3, 'm')).to.deep.equal(['local', 'local', 'local'])
  })

  it('refuses a launch whose replicas cannot all be placed, whole, naming replica and what each worker has room for', () => {
    const refusal = () => chooseWorkers([candidate('a', 9), candidate('b', 5)], 4 * GIB, 1000, 'm')
    expect(refusal)
      .to.throw('replica 1000 of m needs 4000.0 GiB (4.0 GiB each), but the workers have room for 3: a has 9.0 GiB free, room for 2; b has 5.0 GiB free, room for 1. Launch at most 3 replicas')
      .with.property('status', 503)
    expect(refusal).to.throw().with.property('param', 'replica')
    expect(() => chooseWorkers([candidate('local', 12)], 4 * GIB, 4, 'm')).to.throw('the workers have room for 3: local has 12.0 GiB free, room for 3.')
  })

  it('narrows to the worker worker_ip names, by id, address or host, and refuses one that names none', () => {
    const workers = [candidate('a', 8), candidate('b', 8)]
    expect(namedCandidates(workers, 'b').map((c) => c.worker)).to.deep.equal(['b'])
    expect(namedCandidates(workers, 'http://a:41000').map((c) => c.worker)).to.deep.equal(['a'])
    expect(namedCandidates(workers, undefined)).to.have.length(2)
    expect(() => namedCandidates(workers, '10.9.9.9')).to.throw('worker_ip 10.9.9.9 names no worker that answers; workers: a (http://a:41000), b (http://b:41000).')
    expect(matchesWorker(candidate('local', 8, 0, null).status, 'localhost')).to.equal(false)
  })

  it('names the lost workers when none answers', () => {
    expect(noWorkerError(['a:1']).message).to.match(/^no worker is available \(lost: a:1\)/)
  })
})
