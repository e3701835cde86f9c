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

  it("hands repetition_penalty to llama.cpp as its repeat penalty, beside OpenAI's penalties, and none when not asked", () => {
    expect(sampling({repetitionPenalty: 1.3}, 100).repeatPenalty).to.include({penalty: 1.3})
    expect(sampling({presencePenalty: 0.5, repetitionPenalty: 1.1}, 100).repeatPenalty).to.include({penalty: 1.1, presencePenalty: 0.5})
    expect(sampling({presencePenalty: 0.5}, 100).repeatPenalty).to.include({penalty: 1})
    expect(sampling({}, 100).repeatPenalty).to.equal(false)
  })
})
