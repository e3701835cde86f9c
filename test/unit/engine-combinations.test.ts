import {expect} from 'chai'

import {engineCombinations, type EngineSpecs, unavailableRows} from '../../src/cli/engine-combinations.js'

describe('engine combinations of a model (servicectl engine)', () => {
  const engines: EngineSpecs = {
    'llama.cpp': [
      {available: true, model_format: 'ggufv2', model_size_in_billions: '0_5', quantizations: ['q4_0', 'q8_0']},
      {available: true, model_format: 'ggufv2', model_size_in_billions: '7', quantizations: ['q4_0']},
    ],
    sglang: 'SGLang needs Linux with an NVIDIA GPU.',
    transformers: [{available: true, model_format: 'pytorch', model_size_in_billions: '0_5', quantizations: ['none']}],
  }
  const rows = (filters: Parameters<typeof engineCombinations>[2]) => engineCombinations('m', engines, filters).rows.map((row) => `${row.engine} ${row.format} ${row.size} ${row.quantization}`)

  it('lists every combination, and the engines that cannot run here with why', () => {
    const all = engineCombinations('m', engines, {})
    expect(all.rows.map((row) => `${row.engine} ${row.size} ${row.quantization}`)).to.deep.equal(['llama.cpp 0_5 q4_0', 'llama.cpp 0_5 q8_0', 'llama.cpp 7 q4_0', 'transformers 0_5 none'])
    expect(all.rows[0]).to.deep.equal({available: true, engine: 'llama.cpp', format: 'ggufv2', name: 'm', quantization: 'q4_0', size: '0_5'})
    expect(all.unavailable).to.deep.equal(['sglang: SGLang needs Linux with an NVIDIA GPU.'])
    expect(all.unmatched).to.equal(undefined)
  })

  it('keeps the combinations that pass every filter: engine and quantization in any case, size as 0.5 or 0_5', () => {
    expect(rows({engine: 'LLAMA.CPP', quantization: 'Q4_0', size: '0.5'})).to.deep.equal(['llama.cpp ggufv2 0_5 q4_0'])
    expect(rows({format: 'pytorch'})).to.deep.equal(['transformers pytorch 0_5 none'])
  })

  it('names the first filter that leaves no combination, with the values it could have had', () => {
    expect(engineCombinations('m', engines, {format: 'foo'})).to.deep.equal({rows: [], unavailable: ['sglang: SGLang needs Linux with an NVIDIA GPU.'], unmatched: 'no combination of m has format foo; its formats here are ggufv2, pytorch.'})
    expect(engineCombinations('m', engines, {engine: 'vllm'}).unmatched).to.equal('no combination of m has engine vllm; its engines here are llama.cpp, transformers.')
    expect(engineCombinations('m', engines, {engine: 'llama.cpp', quantization: 'q8_0', size: '7'}).unmatched).to.equal(
      'no combination of m with engine llama.cpp, size 7 has quantization q8_0; its quantizations here are q4_0.',
    )
  })

  it('leaves an engine that cannot run here to say why, rather than calling it a mismatch', () => {
    expect(engineCombinations('m', engines, {engine: 'sglang', format: 'ggufv2'})).to.deep.equal({rows: [], unavailable: ['sglang: SGLang needs Linux with an NVIDIA GPU.']})
  })

  it('lists the specs no worker can run as unavailable rows, and says why once per group', () => {
    const specs: EngineSpecs = {
      transformers: [{available: true, model_format: 'pytorch', model_size_in_billions: '0_001', quantizations: ['none']}],
      vllm: [
        {available: false, model_format: 'pytorch', model_size_in_billions: '0_001', quantizations: ['none'], reason: "vLLM's CPU build cannot run m's pytorch spec."},
        {available: false, model_format: 'gptq', model_size_in_billions: '500', quantizations: ['Int4', 'Int8'], reason: 'its weights take more memory than the worker has.'},
      ],
    }
    const {rows, unavailable} = engineCombinations('m', specs, {engine: 'vllm'})
    expect(unavailable).to.deep.equal([])
    expect(rows.map((row) => `${row.format} ${row.quantization} ${row.available}`)).to.deep.equal(['pytorch none false', 'gptq Int4 false', 'gptq Int8 false'])
    expect(unavailableRows(engineCombinations('m', specs, {}).rows)).to.deep.equal([
      "vllm pytorch 0_001 (none): vLLM's CPU build cannot run m's pytorch spec.",
      'vllm gptq 500 (Int4, Int8): its weights take more memory than the worker has.',
    ])
    // A service from before the table said so per spec: what it lists is taken as available.
    expect(engineCombinations('m', {x: [{model_format: 'f', model_size_in_billions: '1', quantizations: ['none']} as never]}, {}).rows[0].available).to.equal(true)
  })
})
