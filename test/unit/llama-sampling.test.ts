import {expect} from 'chai'

import {sampling} from '../../plugins/engine-llama-cpp/src/sampling.js'

describe('llama.cpp sampling options', () => {
  it('gives each request without a seed a random seed of its own, below llama.cpp\'s "pick one" value', () => {
    // Drawn within the same millisecond, where node-llama-cpp's own default (the current second) repeats.
    const seeds = Array.from({length: 16}, () => sampling({temperature: 1}, 100).seed)
    expect(new Set(seeds).size, seeds.join(', ')).to.be.greaterThan(1)
    for (const seed of seeds) expect(seed).to.be.a('number').and.be.within(0, 2 ** 32 - 2).and.satisfy(Number.isInteger)
  })

  it('keeps a given seed, so the same request gives the same answer', () => {
    expect(sampling({seed: 42, temperature: 1}, 100).seed).to.equal(42)
    expect(sampling({seed: 0}, 100).seed).to.equal(0)
  })
})
