import {expect} from 'chai'
import {PNG} from 'pngjs'

import {flattenFamily} from '../../src/kernel/catalogue.js'
import {ServiceError} from '../../src/kernel/errors.js'
import {mediaKit} from '../../src/kernel/media-kit.js'

const {imageOf, MediaStore, normalizeFamily, parseKwargs, parseSize} = mediaKit

function refusal(run: () => unknown): ServiceError {
  try {
    run()
  } catch (error) {
    expect(error).to.be.instanceOf(ServiceError)
    return error as ServiceError
  }

  throw new Error('expected a refusal')
}

describe('media kit (image and video types)', () => {
  it('keeps url answers for their time, and drops the oldest once over its bytes', () => {
    let now = 0
    const store = new MediaStore(10, 1000, () => now)
    const first = store.put(Buffer.alloc(4), 'image/png', 'png')
    now = 500
    const second = store.put(Buffer.alloc(4), 'image/png', 'png')
    expect(store.get(first)?.bytes.length).to.equal(4)
    now = 800
    const third = store.put(Buffer.alloc(4), 'image/png', 'png')
    expect(store.get(first), 'over 10 bytes, the oldest goes').to.equal(undefined)
    expect(store.get(second)?.mediaType).to.equal('image/png')
    now = 1600
    expect(store.get(second), 'its time is over').to.equal(undefined)
    expect(store.get(third)).to.not.equal(undefined)
    expect(third).to.match(/^[\da-f-]{36}\.png$/)
  })

  it('reads sizes as OpenAI and Xinference write them, and refuses ones no model makes, naming the field', () => {
    expect(parseSize('64x32')).to.deep.equal({height: 32, width: 64})
    expect(parseSize('64*32')).to.deep.equal({height: 32, width: 64})
    expect(parseSize('auto')).to.equal(undefined)
    expect(refusal(() => parseSize('33x33')).message).to.match(/multiple of 8 .* such as 32/)
    expect(refusal(() => parseSize('8192x8192')).param).to.equal('size')
    expect(refusal(() => parseSize('wide')).param).to.equal('size')
  })

  it('reads a picture\'s type and size from its bytes, and refuses what is not one', () => {
    const png = PNG.sync.write(new PNG({height: 3, width: 5}))
    expect(imageOf(png, 'image')).to.deep.include({height: 3, mediaType: 'image/png', width: 5})
    expect(refusal(() => imageOf(Buffer.from('hello'), 'mask')).param).to.equal('mask')
  })

  it('refuses a picture of more pixels than the image programs decode (a decompression bomb), naming the field', () => {
    const bomb = PNG.sync.write(new PNG({height: 3, width: 5}))
    // The header's width and height, which is all a reader of sizes looks at; a real bomb's pixels compress to little.
    bomb.writeUInt32BE(20_000, 16)
    bomb.writeUInt32BE(20_000, 20)
    const error = refusal(() => imageOf(bomb, 'image[1]'))
    expect([error.status, error.param, error.message]).to.deep.equal([
      400,
      'image[1]',
      '`image[1]` is 20000x20000 pixels, more than the 89,478,485 this service reads (about 9459x9459); send a smaller picture.',
    ])
  })

  it('takes kwargs as an object or its JSON text', () => {
    expect(parseKwargs('{"eta": 0.5}')).to.deep.equal({eta: 0.5})
    expect(parseKwargs(undefined)).to.deep.equal({})
    expect(refusal(() => parseKwargs('[1]')).param).to.equal('kwargs')
  })

  it('refuses kwargs text nested past the nesting any free-form value may have', () => {
    const deep = refusal(() => parseKwargs(`{"a":${'['.repeat(100_000)}${']'.repeat(100_000)}}`))
    expect([deep.status, deep.param]).to.deep.equal([400, 'kwargs'])
    expect(deep.message).to.include('more than 64 levels deep')
  })

  it('holds the pipeline arguments kwargs may give to the limits of the fields they stand for', () => {
    expect(parseKwargs({height: 512, num_inference_steps: 20, sample_steps: 4, width: 768})).to.deep.equal({height: 512, num_inference_steps: 20, sample_steps: 4, width: 768})
    const width = refusal(() => parseKwargs({width: 20_000}))
    expect([width.status, width.param, width.message]).to.deep.equal([400, 'kwargs', '`kwargs.width` must be an integer from 8 to 4096, a multiple of 8, as `size` is (got 20000).'])
    expect(refusal(() => parseKwargs('{"batch_count": 500}')).message).to.equal('`kwargs.batch_count` must be an integer from 1 to 10, as `n` is (got 500).')
    expect(refusal(() => parseKwargs({num_inference_steps: 'many'})).param).to.equal('kwargs')
    expect(refusal(() => parseKwargs({height: 513})).param).to.equal('kwargs')
  })

  it("takes a picture's own size, in whole blocks of 8 pixels and within 4096, as the size made from it by default", () => {
    expect(mediaKit.sizeOfPicture({height: 513, width: 513})).to.deep.equal({height: 512, width: 512})
    expect(mediaKit.sizeOfPicture({height: 3, width: 5})).to.deep.equal({height: 8, width: 8})
    expect(mediaKit.sizeOfPicture({height: 4000, width: 8000})).to.deep.equal({height: 2048, width: 4096})
  })

  it('turns a family in Xinference\'s form into a diffusers spec and a GGUF spec per hub', () => {
    const family = normalizeFamily({
      model_name: 'flux',
      model_src: {
        huggingface: {gguf_model_file_name_template: 'flux-{quantization}.gguf', gguf_model_id: 'city96/flux-gguf', gguf_quantizations: ['Q4_0', 'Q8_0'], model_id: 'bfl/flux', model_revision: 'abc'},
        modelscope: {model_id: 'ms/flux', model_revision: 'master'},
      },
    })
    const specs = flattenFamily(family).map((spec) => [spec.model_format, spec.model_hub, spec.model_id, spec.quantization])
    expect(specs).to.deep.equal([
      ['diffusers', 'huggingface', 'bfl/flux', 'none'],
      ['diffusers', 'modelscope', 'ms/flux', 'none'],
      ['ggufv2', 'huggingface', 'city96/flux-gguf', 'Q4_0'],
      ['ggufv2', 'huggingface', 'city96/flux-gguf', 'Q8_0'],
    ])
    expect(flattenFamily(normalizeFamily({model_name: 'mine', model_uri: '/models/pipeline'}))[0]).to.deep.include({model_format: 'diffusers', model_uri: 'file:///models/pipeline'})
  })

  it('takes the repository or folder of a family that only reads text (ocr) for a transformers model, format pytorch', () => {
    const hub = normalizeFamily({model_ability: ['ocr'], model_name: 'GOT-OCR2_0', model_src: {huggingface: {model_id: 'stepfun-ai/GOT-OCR2_0', model_revision: 'cf6b'}}})
    expect(flattenFamily(hub).map((spec) => [spec.model_format, spec.model_id])).to.deep.equal([['pytorch', 'stepfun-ai/GOT-OCR2_0']])
    expect(flattenFamily(normalizeFamily({model_ability: ['ocr'], model_name: 'mine', model_uri: '/models/ocr'}))[0]).to.deep.include({model_format: 'pytorch'})
    expect(flattenFamily(normalizeFamily({model_ability: ['text2image', 'ocr'], model_name: 'both', model_uri: '/models/both'}))[0]).to.deep.include({model_format: 'diffusers'})
  })
})
