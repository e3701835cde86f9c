import {expect} from 'chai'

import type {RepoSnapshot} from '../../src/weights/hubs.js'

import {canonicalHubName, ggufChoices, hubFamily, parseHubName, pickChoice, registrationName, sizeInBillions} from '../../src/weights/hub-names.js'

function snapshot(files: Record<string, number>, repo = 'user/Model-GGUF'): RepoSnapshot {
  return {commit: 'abc', files: new Map(Object.entries(files).map(([path, size]) => [path, {path, sha256: null, size}])), hub: 'huggingface', repo, revision: 'main'}
}

describe('hub model names', () => {
  it('reads hf.co, huggingface.co and modelscope.cn names, with or without a quantization (latest means none)', () => {
    expect(parseHubName('hf.co/Qwen/Qwen2.5-0.5B-Instruct-GGUF:Q4_K_M')).to.deep.equal({hub: 'huggingface', quantization: 'Q4_K_M', repo: 'Qwen/Qwen2.5-0.5B-Instruct-GGUF'})
    expect(parseHubName('huggingface.co/a/b')).to.deep.equal({hub: 'huggingface', repo: 'a/b'})
    expect(parseHubName('modelscope.cn/a/b:latest')).to.deep.equal({hub: 'modelscope', repo: 'a/b'})
    expect(canonicalHubName(parseHubName('HuggingFace.co/Qwen/X-GGUF:Q4_K_M'))).to.equal('hf.co/qwen/x-gguf:q4_k_m')
    expect(registrationName({hub: 'modelscope', quantization: 'Q8_0', repo: 'a/b'})).to.equal('ms--a--b--Q8_0')
    const long = registrationName({hub: 'huggingface', quantization: 'Q8_0', repo: `${'u'.repeat(96)}/${'r'.repeat(96)}`})
    expect(long).to.have.length(100).and.to.match(/^u+-[0-9a-f]{9}$/)
  })

  it('refuses names that could reach beyond a repository, naming the field', () => {
    for (const name of ['hf.co/../x', 'hf.co/a/..', 'hf.co/a/b/c', 'hf.co/a/b:q/x', 'hf.co/a/.b', 'example.com/a/b', 'hf.co/a/b:', `hf.co/a/${'b'.repeat(97)}`])
      expect(() => parseHubName(name), name).to.throw().with.property('param', 'model_name')
  })

  it('takes Q4_K_M by default, else the smallest file; groups split sets; leaves out projectors and incomplete sets', () => {
    const files = {'m-F16.gguf': 300, 'm-IQ4_XS.gguf': 90, 'm-Q2_K.gguf': 50, 'm-Q4_K_M.gguf': 100, 'mmproj-F16.gguf': 10}
    expect(pickChoice(snapshot(files), parseHubName('hf.co/user/Model-GGUF')).quantization).to.equal('Q4_K_M')
    const {['m-Q4_K_M.gguf']: _, ...withoutDefault} = files
    expect(pickChoice(snapshot(withoutDefault), parseHubName('hf.co/user/Model-GGUF')).quantization).to.equal('Q2_K')
    expect(pickChoice(snapshot(files), parseHubName('hf.co/user/Model-GGUF:iq4_xs')).files.map((file) => file.path)).to.deep.equal(['m-IQ4_XS.gguf'])
    const split = snapshot({'big/m-Q8_0-00001-of-00002.gguf': 5, 'big/m-Q8_0-00002-of-00002.gguf': 5, 'm-Q6_K-00001-of-00002.gguf': 1})
    expect(ggufChoices(split).map((choice) => [choice.quantization, choice.bytes, choice.files.length])).to.deep.equal([['Q8_0', 10, 2]])
    expect(() => pickChoice(snapshot(files), parseHubName('hf.co/user/Model-GGUF:Q5_K_M'))).to.throw('has no quantization "Q5_K_M"; it has: Q2_K, IQ4_XS, Q4_K_M, F16.')
  })

  it('makes a split family whose template names every part, and a pytorch family of a safetensors repo', () => {
    const split = snapshot({'m-Q8_0-00001-of-00002.gguf': 5, 'm-Q8_0-00002-of-00002.gguf': 5}, 'user/Model-7B-GGUF')
    const name = parseHubName('hf.co/user/Model-7B-GGUF:q8_0')
    const family = hubFamily(name, split, pickChoice(split, name), 'user--Model-7B-GGUF--Q8_0')
    expect(family.model_specs![0]).to.deep.equal({
      model_format: 'ggufv2',
      model_size_in_billions: '7',
      model_src: {huggingface: {model_file_name_split_template: 'm-Q8_0-{part}.gguf', model_file_name_template: 'm-Q8_0-00001-of-00002.gguf', model_id: 'user/Model-7B-GGUF', model_revision: 'abc', quantization_parts: {Q8_0: ['00001-of-00002', '00002-of-00002']}, quantizations: ['Q8_0']}},
    })
    const weights = snapshot({'config.json': 1, 'model.safetensors': 2e9}, 'user/tiny')
    const choice = pickChoice(weights, parseHubName('hf.co/user/tiny'))
    expect(choice).to.deep.include({format: 'pytorch', quantization: 'none'})
    expect(sizeInBillions('user/tiny', choice)).to.equal('1')
    expect(() => pickChoice(weights, parseHubName('hf.co/user/tiny:Q4_K_M'))).to.throw('has safetensors weights and no GGUF files')
  })
})
