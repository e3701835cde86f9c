import {expect} from 'chai'

import {queueOrder} from '../../bench/measure.js'

describe('bench: order of first tokens against the order requests were sent', () => {
  it('is FIFO when first tokens come in waves of n_parallel in sending order, whatever the order inside a wave', () => {
    const shuffledInWaves = queueOrder([3, 1, 2, 4, 12, 11, 10, 13], 4)
    expect(shuffledInWaves.outOfWave).to.equal(0)
    expect(shuffledInWaves.rho).to.be.closeTo(1 - (6 * 14) / (8 * 63), 1e-9)
    expect(queueOrder([1, 2, 3, 4, 5, 6, 7, 8], 4)).to.deep.equal({outOfWave: 0, rho: 1})
  })

  it('counts the requests a later one overtook into an earlier wave, and a reversed queue as rho -1', () => {
    // The first request (sent first) is served last: it and the one that moved up into the first wave are out of theirs.
    expect(queueOrder([9, 1, 2, 3, 5, 6, 7, 8], 4).outOfWave).to.equal(2)
    expect(queueOrder([8, 7, 6, 5, 4, 3, 2, 1], 4)).to.deep.equal({outOfWave: 8, rho: -1})
    expect(queueOrder([5], 4)).to.deep.equal({outOfWave: 0, rho: 1})
  })
})
