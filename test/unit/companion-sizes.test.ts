/**
 * Companion files in a memory estimate (src/weights/companions.ts, the stable-diffusion.cpp estimator, and
 * `servicectl cal-model-mem`'s lines): each companion a launch would download counted with its size from the local
 * hub's metadata or the cache, never downloaded for it; one whose size is unknown is named with the reason and not
 * counted; one the launch names itself is left out, as the launch would leave it.
 */
import {expect} from 'chai'
import {writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import type {CompanionFile} from '../../src/kernel/companions.js'
import type {ResolvedSpec} from '../../src/kernel/catalogue.js'

import estimateStableDiffusion from '../../plugins/engine-stable-diffusion-cpp/src/estimate.js'
import {memoryEstimateLines} from '../../src/cli/memory-estimate-lines.js'
import {errorFactory} from '../../src/kernel/errors.js'
import {companionSizes, withCompanions, withCompanionSizes} from '../../src/weights/companions.js'
import {WeightStore} from '../../src/weights/store.js'
import {FakeHub} from '../helpers/fake-hub.js'
import {temporaryDirectory} from '../helpers/service.js'

const quiet = {debug() {}, error() {}, info() {}, warn() {}}
const VAE: CompanionFile = {file_name: 'ae.safetensors', model_id: 'test-org/flux', model_revision: null, role: 'vae'}
const CLIP: CompanionFile = {file_name: 'text_encoders/clip_l.safetensors', model_id: 'test-org/encoders', role: 'clip_l'}

describe('companion files in a memory estimate', () => {
  let hub: FakeHub
  let directory: string
  const spec = (companions: CompanionFile[]) => ({companion_files: companions, model_hub: 'huggingface'}) as ResolvedSpec
  const fetched = () => hub.fileRequests().map((request) => new URL(request.url, hub.url).searchParams.get('file'))
  const store = () => new WeightStore({cacheDir: join(directory, 'cache'), env: {HF_ENDPOINT: hub.url}, log: quiet})

  before(async () => {
    directory = await temporaryDirectory()
    await writeFile(join(directory, 'ae'), 'a VAE\n')
    await writeFile(join(directory, 'clip'), 'a text encoder\n')
    hub = await FakeHub.start()
    await hub.addRepo('test-org/flux', {'ae.safetensors': join(directory, 'ae')})
    await hub.addRepo('test-org/encoders', {'text_encoders/clip_l.safetensors': join(directory, 'clip')})
  })

  after(async () => hub?.stop())

  it("sizes each companion from the hub's metadata without downloading it, then from the cache once downloaded", async () => {
    const sizes = await companionSizes(store(), spec([VAE, CLIP]), {cpu_threads: 2})
    expect(sizes).to.deep.equal([
      {bytes: 6, file_name: 'ae.safetensors', model_id: 'test-org/flux', role: 'vae', source: 'huggingface'},
      {bytes: 15, file_name: 'text_encoders/clip_l.safetensors', model_id: 'test-org/encoders', role: 'clip_l', source: 'huggingface'},
    ])
    expect(fetched(), 'nothing downloaded').to.deep.equal([])

    await withCompanions(store(), spec([VAE]), {}, {})
    expect((await companionSizes(store(), spec([VAE]), {}))[0]).to.deep.include({bytes: 6, source: 'cache'})
  })

  it('leaves out a companion the launch names a file for, and names one whose size is unknown without counting it', async () => {
    const missing: CompanionFile = {file_name: 't5xxl.safetensors', model_id: 'test-org/encoders', role: 't5xxl'}
    const sizes = await companionSizes(store(), spec([VAE, CLIP, missing]), {vae: '/models/my-vae.safetensors'})
    expect(sizes.map((companion) => companion.role)).to.deep.equal(['clip_l', 't5xxl'])
    expect(sizes[1].bytes).to.equal(undefined)
    expect(sizes[1].error).to.contain('t5xxl.safetensors')

    const estimate = withCompanionSizes({context_length: 0, kv_cache_bytes: 0, overhead_bytes: 0, total_bytes: 100, weights_bytes: 100}, sizes)
    expect(estimate).to.deep.include({companion_files: sizes, total_bytes: 115, weights_bytes: 115})
    expect(withCompanionSizes({total_bytes: 100, weights_bytes: 100}, []), 'a model without companions').to.deep.equal({total_bytes: 100, weights_bytes: 100})
  })

  it('ends with the abort when its caller goes away, rather than calling the sizes unknown', async () => {
    const outcome = await companionSizes(store(), spec([VAE, CLIP]), {}, AbortSignal.abort()).then(
      (sizes) => sizes,
      (error: Error) => error,
    )
    expect(outcome).to.be.instanceOf(Error)
  })

  it("estimates a GGUF image model's weights for stable-diffusion.cpp as the file's size, from the hub or the disk", async () => {
    const request = {files: ['https://hub/x.gguf'], headers: {}, modelType: 'image', parameters: {}, sizes: [1000, 24], spec: spec([])}
    expect(await estimateStableDiffusion(request, {errors: errorFactory})).to.deep.include({context_length: 0, kv_cache_bytes: 0, total_bytes: 1024, weights_bytes: 1024})
    const onDisk = await estimateStableDiffusion({...request, files: [join(directory, 'clip')], sizes: undefined}, {errors: errorFactory})
    expect(onDisk.weights_bytes).to.equal(15)
    expect(onDisk.not_counted).to.contain('compute buffers')
  })

  it('prints each companion under the weights, with where its size came from or why it is unknown', () => {
    const lines = memoryEstimateLines({
      companion_files: [
        {bytes: 335_304_388, file_name: 'ae.safetensors', model_id: 'black-forest-labs/FLUX.1-schnell', role: 'vae', source: 'huggingface'},
        {error: 'the hub did not answer', file_name: 't5xxl_fp16.safetensors', model_id: 'comfyanonymous/flux_text_encoders', role: 't5xxl'},
      ],
      context_length: 0,
      kv_cache_bytes: 0,
      model_version: 'FLUX.1-schnell--12B--ggufv2--Q4_0',
      not_counted: "stable-diffusion.cpp's compute buffers, which grow with the image size a request asks for",
      overhead_bytes: 0,
      source: 'huggingface',
      total_bytes: 7_035_304_388,
      weights_bytes: 7_035_304_388,
    })
    expect(lines).to.deep.equal([
      'Model version:  FLUX.1-schnell--12B--ggufv2--Q4_0 (sizes read from huggingface)',
      'Weights:        7.04 GB (7035304388 bytes), with 1 companion file',
      '  vae: black-forest-labs/FLUX.1-schnell/ae.safetensors, 335.3 MB (335304388 bytes), size from huggingface',
      '  t5xxl: comfyanonymous/flux_text_encoders/t5xxl_fp16.safetensors, size unknown, not counted: the hub did not answer',
      'Overhead:       0 B (0 bytes)',
      'Total:          7.04 GB (7035304388 bytes)',
      "Not counted:    stable-diffusion.cpp's compute buffers, which grow with the image size a request asks for.",
    ])
  })
})
