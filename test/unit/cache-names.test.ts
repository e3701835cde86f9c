import {expect} from 'chai'
import {mkdir, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import {cacheEntryName, ModelCache} from '../../src/weights/cache.js'
import {NO_SIZE} from '../../src/kernel/catalogue.js'
import {temporaryDirectory} from '../helpers/service.js'

describe('cache entry names', () => {
  it('names sized and size-less models so a person can tell them apart, and read both back', async () => {
    const sized = cacheEntryName('qwen2.5-instruct', {model_format: 'ggufv2', model_size_in_billions: '0_5', quantization: 'q4_k_m'})
    const sizeless = cacheEntryName('bge-small-en-v1.5', {model_format: 'ggufv2', model_size_in_billions: NO_SIZE, quantization: 'q8_0'})
    expect([sized, sizeless]).to.deep.equal(['qwen2.5-instruct--0_5B--ggufv2--q4_k_m', 'bge-small-en-v1.5--ggufv2--q8_0'])

    const root = await temporaryDirectory()
    for (const version of [sized, sizeless]) {
      await mkdir(join(root, version))
      await writeFile(join(root, version, 'model.gguf'), 'x')
    }

    const listed = await new ModelCache(root).list()
    expect(listed.map(({model_format, model_name, model_size_in_billions, quantization}) => ({model_format, model_name, model_size_in_billions, quantization}))).to.deep.equal([
      {model_format: 'ggufv2', model_name: 'bge-small-en-v1.5', model_size_in_billions: NO_SIZE, quantization: 'q8_0'},
      {model_format: 'ggufv2', model_name: 'qwen2.5-instruct', model_size_in_billions: '0_5', quantization: 'q4_k_m'},
    ])
  })
})
