import {expect} from 'chai'

import {flattenFamily, matchSpec, normalizeSize, parseFamily, specFileNames} from '../../src/kernel/catalogue.js'

const family = {
  model_name: 'demo',
  model_specs: [
    {
      model_format: 'ggufv2',
      model_size_in_billions: '0_5',
      model_src: {
        huggingface: {model_file_name_template: 'demo-{quantization}.gguf', model_id: 'org/demo-GGUF', quantizations: ['q4_0', 'Q8_0']},
        modelscope: {model_file_name_template: 'demo-{quantization}.gguf', model_id: 'org/demo-GGUF', quantizations: ['q4_0']},
      },
    },
    {
      model_format: 'ggufv2',
      model_size_in_billions: 7,
      model_src: {
        huggingface: {
          model_file_name_split_template: 'demo-7b-{quantization}-{part}.gguf',
          model_file_name_template: 'demo-7b-{quantization}.gguf',
          model_id: 'org/demo-7b',
          quantization_parts: {q4_k_m: ['00001-of-00002', '00002-of-00002']},
          quantizations: ['q4_k_m'],
        },
      },
    },
    {model_format: 'pytorch', model_size_in_billions: 7, model_src: {huggingface: {model_id: 'org/demo', quantizations: ['none']}}},
  ],
}
const llamaCpp = {formats: ['ggufv2'], name: 'llama.cpp'}

describe('catalogue', () => {
  it('reads sizes written as 0_5, 0.5, "7" or 7 alike', () => {
    expect(['0_5', '0.5', 0.5, '0_50'].map(normalizeSize)).to.deep.equal(['0_5', '0_5', '0_5', '0_5'])
    expect([7, '7', '7_0'].map(normalizeSize)).to.deep.equal(['7', '7', '7'])
    expect(() => normalizeSize('large')).to.throw(/^a model size must be a number of billions, such as 7 or 0_5\.$/)
  })

  it('reads a family from JSON, locating a mistake without quoting the text', () => {
    expect(parseFamily('{"model_name": "demo"}', 'the file').model_name).to.equal('demo')
    expect(() => parseFamily('{"model_name": "demo",\n "key": s3cr3t}', 'the file', 'model')).to.throw(/^the file is not valid JSON\.$/)
    expect(() => parseFamily('{"key": "s3cr3t" }x', 'the file')).to.throw(/^the file is not valid JSON \(the mistake is at line 1 column 19\)\.$/)
    expect(() => parseFamily('root:x:0:0:root', 'the file')).to.throw(/^the file is not valid JSON\.$/)
  })

  it('flattens each hub and quantization into one launchable spec', () => {
    const specs = flattenFamily(family)
    expect(specs).to.have.length(5)
    expect(specs[0]).to.include({model_hub: 'huggingface', model_id: 'org/demo-GGUF', model_size_in_billions: '0_5', quantization: 'q4_0'})
  })

  it('matches case-insensitively, preferring the requested hub', () => {
    expect(matchSpec(family, llamaCpp, {quantization: 'q8_0'})).to.include({quantization: 'Q8_0'})
    expect(matchSpec(family, llamaCpp, {hub: 'modelscope', size_in_billions: '0.5'})).to.include({model_hub: 'modelscope'})
  })

  it('names the first field that rules everything out, with its allowed values', () => {
    expect(() => matchSpec(family, {formats: ['mlx'], name: 'MLX'}, {})).to.throw(/runs the formats mlx, and the model comes as ggufv2, pytorch/)
    expect(() => matchSpec(family, llamaCpp, {model_format: 'awq'})).to.throw(/choose one of: ggufv2/)
    expect(() => matchSpec(family, llamaCpp, {size_in_billions: '3'})).to.throw(/choose one of: 0_5, 7/)
    expect(() => matchSpec(family, llamaCpp, {quantization: 'q2_k', size_in_billions: '7'})).to.throw(/choose one of: q4_k_m/)
  })

  it('expands split GGUF parts from the split template', () => {
    const spec = matchSpec(family, llamaCpp, {size_in_billions: '7'})
    expect(specFileNames(spec)).to.deep.equal(['demo-7b-q4_k_m-00001-of-00002.gguf', 'demo-7b-q4_k_m-00002-of-00002.gguf'])
    expect(specFileNames(matchSpec(family, llamaCpp, {}))).to.deep.equal(['demo-q4_0.gguf'])
  })
})
