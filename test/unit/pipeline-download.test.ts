/**
 * A diffusers pipeline repository through the weight store against the local hub (no Python: its weights are small
 * real safetensors files and its configs JSON): the variant a registration's torch_dtype asks for, sharded weights
 * checked against their index before any weights download, progress over the files that download, and nothing left
 * behind by a cancelled or refused download.
 */
import {expect} from 'chai'
import {existsSync} from 'node:fs'
import {readdir, writeFile} from 'node:fs/promises'
import {join, relative} from 'node:path'

import type {ModelFamily, ResolvedSpec} from '../../src/kernel/catalogue.js'
import type {DownloadProgress} from '../../src/protocol/worker.js'

import {MANIFEST} from '../../src/weights/cache.js'
import {WeightStore} from '../../src/weights/store.js'
import {FakeHub} from '../helpers/fake-hub.js'
import {temporaryDirectory} from '../helpers/service.js'

const quiet = {debug() {}, error() {}, info() {}, warn() {}}

/** A real safetensors file: one float32 tensor of `count` values. */
async function writeSafetensors(path: string, count: number): Promise<void> {
  const header = Buffer.from(JSON.stringify({weight: {data_offsets: [0, count * 4], dtype: 'F32', shape: [count]}}))
  const length = Buffer.alloc(8)
  length.writeBigUInt64LE(BigInt(header.length))
  await writeFile(path, Buffer.concat([length, header, Buffer.alloc(count * 4, 1)]))
}

const spec = (modelId: string, hub = 'huggingface'): ResolvedSpec => ({
  model_file_name_split_template: null,
  model_file_name_template: null,
  model_format: 'diffusers',
  model_hub: hub,
  model_id: modelId,
  model_revision: null,
  model_size_in_billions: 'none',
  model_uri: null,
  quantization: 'none',
  quantization_parts: null,
})

const INDEX = {_class_name: 'FluxPipeline', scheduler: ['diffusers', 'FlowMatchEulerDiscreteScheduler'], tokenizer: ['transformers', 'T5TokenizerFast'], transformer: ['diffusers', 'FluxTransformer2DModel'], vae: ['diffusers', 'AutoencoderKL']}
const SHARDS = ['transformer/diffusion_pytorch_model-00001-of-00002.safetensors', 'transformer/diffusion_pytorch_model-00002-of-00002.safetensors']
const SMALL = ['model_index.json', 'scheduler/scheduler_config.json', 'tokenizer/tokenizer.json', 'transformer/config.json', 'transformer/diffusion_pytorch_model.safetensors.index.json', 'vae/config.json']

describe('diffusers pipeline downloads (weight store, local hub)', () => {
  let hub: FakeHub
  let directory: string

  before(async () => {
    directory = await temporaryDirectory()
    const file = (name: string) => join(directory, name)
    await writeFile(file('model_index.json'), JSON.stringify(INDEX))
    await writeFile(file('config.json'), JSON.stringify({_class_name: 'AutoencoderKL'}))
    await writeFile(file('index.json'), JSON.stringify({weight_map: {a: 'diffusion_pytorch_model-00001-of-00002.safetensors', b: 'diffusion_pytorch_model-00002-of-00002.safetensors'}}))
    await writeFile(file('bad-index.json'), JSON.stringify({weight_map: {a: 'diffusion_pytorch_model-00001-of-00002.safetensors', b: 'diffusion_pytorch_model-00009-of-00009.safetensors'}}))
    await writeSafetensors(file('weights.safetensors'), 4096)
    hub = await FakeHub.start()
    const small = {
      'model_index.json': file('model_index.json'),
      'scheduler/scheduler_config.json': file('config.json'),
      'tokenizer/tokenizer.json': file('config.json'),
      'transformer/config.json': file('config.json'),
      'transformer/diffusion_pytorch_model.safetensors.index.json': file('index.json'),
      'vae/config.json': file('config.json'),
    }
    const weights = {...Object.fromEntries(SHARDS.map((shard) => [shard, file('weights.safetensors')])), 'vae/diffusion_pytorch_model.safetensors': file('weights.safetensors')}
    const fp16 = {'vae/diffusion_pytorch_model.fp16.safetensors': file('weights.safetensors')}
    await hub.addRepo('test-org/pipeline', {...small, ...weights, ...fp16, 'flux1.safetensors': file('weights.safetensors'), 'vae/diffusion_pytorch_model.bin': file('weights.safetensors')})
    await hub.addRepo('test-org/pipeline-bad-index', {...small, ...weights, 'transformer/diffusion_pytorch_model.safetensors.index.json': file('bad-index.json')})
  })

  after(async () => hub?.stop())

  const store = () => new WeightStore({cacheDir: join(directory, 'cache'), env: {HF_ENDPOINT: hub.url, MODELSCOPE_ENDPOINT: hub.url, SERVICE_DOWNLOAD_RETRY_DELAY_MS: '1'}, log: quiet})
  const folder = (name: string, variant?: string) => join(directory, 'cache', `${name}--diffusers--none${variant ? `@${variant}` : ''}`)
  const family = (name: string, config: Record<string, unknown> = {}): ModelFamily => ({default_model_config: config, model_name: name})
  const files = async (path: string) =>
    (await readdir(path, {recursive: true, withFileTypes: true}))
      .filter((entry) => entry.isFile())
      .map((entry) => relative(path, join(entry.parentPath, entry.name)))
      .sort()

  it('takes the fp16 files a float16 registration asks for where a component has them, reporting progress over what downloads', async () => {
    const progress: DownloadProgress[] = []
    const path = await store().resolve({family: family('fp16', {torch_dtype: 'float16'}), modelName: 'fp16', spec: spec('test-org/pipeline')}, {onProgress: (report) => progress.push(report)})
    expect(path).to.equal(folder('fp16', 'fp16'))
    expect(await files(path)).to.deep.equal([...SMALL, ...SHARDS, MANIFEST, 'vae/diffusion_pytorch_model.fp16.safetensors'].sort())
    expect(progress.at(-1)!.files.map((file) => file.name)).to.deep.equal([...SMALL, ...SHARDS, 'vae/diffusion_pytorch_model.fp16.safetensors'])
    expect(progress.at(-1)!.downloadedBytes).to.equal(progress.at(-1)!.totalBytes)

    const plain = await store().resolve({family: family('plain'), modelName: 'plain', spec: spec('test-org/pipeline')})
    expect(await files(plain)).to.include('vae/diffusion_pytorch_model.safetensors').and.not.include('vae/diffusion_pytorch_model.fp16.safetensors')
  })

  it("keeps a variant's files and the plain ones of one model in folders of their own, the plain one named as before", async () => {
    const launch = (config: Record<string, unknown>) => store().resolve({family: family('shared', config), modelName: 'shared', spec: spec('test-org/pipeline')})
    const fp16 = await launch({variant: 'fp16'})
    const plain = await launch({})
    expect([fp16, plain]).to.deep.equal([folder('shared', 'fp16'), folder('shared')])
    expect(await files(fp16)).to.include('vae/diffusion_pytorch_model.fp16.safetensors').and.not.include('vae/diffusion_pytorch_model.safetensors')
    expect(await files(plain)).to.include('vae/diffusion_pytorch_model.safetensors').and.not.include('vae/diffusion_pytorch_model.fp16.safetensors')

    // Each folder stays complete for its own launches: neither downloads again, nor is served the other's files.
    const before = hub.requests.length
    expect([await launch({}), await launch({torch_dtype: 'float16'}), await launch({variant: 'fp16'})]).to.deep.equal([folder('shared'), folder('shared', 'fp16'), folder('shared', 'fp16')])
    expect(hub.requests.length).to.equal(before)
    const cached = await store().cache.list()
    expect(cached.filter((entry) => entry.model_name === 'shared').map((entry) => [entry.model_version, entry.quantization, entry.complete])).to.deep.equal([
      ['shared--diffusers--none', 'none', true],
      ['shared--diffusers--none@fp16', 'none', true],
    ])
  })

  it('takes the same files from ModelScope, whose listing names the folders\' files by their paths', async () => {
    const path = await store().resolve({family: family('modelscope'), modelName: 'modelscope', spec: spec('test-org/pipeline', 'modelscope')})
    expect(await files(path)).to.deep.equal([...SMALL, ...SHARDS, MANIFEST, 'vae/diffusion_pytorch_model.safetensors'].sort())
  })

  it('refuses a pipeline whose shard index names a shard it lacks before any weights download, and keeps nothing', async () => {
    const before = hub.requests.length
    const error = await store().resolve({family: family('bad'), modelName: 'bad', spec: spec('test-org/pipeline-bad-index')}).catch((error_) => error_)
    expect(error).to.include({code: 'hub_not_found', status: 502})
    expect(error.message).to.equal('the repo test-org/pipeline-bad-index at main lacks weight files its transformer/diffusion_pytorch_model.safetensors.index.json names: transformer/diffusion_pytorch_model-00009-of-00009.safetensors.')
    expect(hub.requests.slice(before).filter((request) => request.kind === 'file' && new URL(request.url, hub.url).searchParams.get('file')?.endsWith('.safetensors'))).to.have.length(0)
    expect(existsSync(folder('bad'))).to.equal(false)
  })

  it('leaves nothing when the launch is cancelled part-way through a component\'s weights', async () => {
    const hold = hub.hold(SHARDS[1], 1000)
    const controller = new AbortController()
    const download = store().resolve({family: family('cancelled'), modelName: 'cancelled', spec: spec('test-org/pipeline')}, {signal: controller.signal})
    await hold.reached
    controller.abort()
    expect(await download.catch((error) => error.code)).to.equal('request_aborted')
    hold.release()
    expect(existsSync(folder('cancelled'))).to.equal(false)
  })
})
