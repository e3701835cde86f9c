/**
 * Whole-repository downloads (the safetensors, AWQ, GPTQ, FP8 and MLX specs, which name a repo and no file) against the
 * local hub: which files come, that they arrive verified into one cache folder with a manifest, resume after a dropped
 * connection, are shared by launches at the same time, come from the spec's `model_revision`, and leave nothing when
 * the repo cannot be used.
 */
import {expect} from 'chai'
import {existsSync} from 'node:fs'
import {readdir, readFile, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import type {ResolvedSpec} from '../../src/kernel/catalogue.js'
import type {DownloadProgress} from '../../src/protocol/worker.js'

import {MANIFEST} from '../../src/weights/cache.js'
import {WeightStore} from '../../src/weights/store.js'
import {FakeHub, type FakeHubRepo} from '../helpers/fake-hub.js'
import {temporaryDirectory} from '../helpers/service.js'

const quiet = {debug() {}, error() {}, info() {}, warn() {}}

/** A real safetensors file: one float32 tensor of `count` values. */
async function writeSafetensors(path: string, name: string, count: number): Promise<void> {
  const header = Buffer.from(JSON.stringify({[name]: {data_offsets: [0, count * 4], dtype: 'F32', shape: [count]}}))
  const length = Buffer.alloc(8)
  length.writeBigUInt64LE(BigInt(header.length))
  const data = Buffer.alloc(count * 4)
  for (let index = 0; index < count; index++) data.writeFloatLE(Math.sin(index), index * 4)
  await writeFile(path, Buffer.concat([length, header, data]))
}

const spec = (modelId: string, quantization = 'none', revision: string | null = null): ResolvedSpec => ({
  model_file_name_split_template: null,
  model_file_name_template: null,
  model_format: 'pytorch',
  model_hub: 'huggingface',
  model_id: modelId,
  model_revision: revision,
  model_size_in_billions: '0_5',
  model_uri: null,
  quantization,
  quantization_parts: null,
})

/** What a launch needs from the sharded repo: its small files and the two shards the index names. */
const NEEDED = ['README.md', 'config.json', 'generation_config.json', 'model-00001-of-00002.safetensors', 'model-00002-of-00002.safetensors', 'model.safetensors.index.json', 'tokenizer.json', 'tokenizer_config.json']

describe('whole-repository downloads (safetensors)', () => {
  let hub: FakeHub
  let sharded: FakeHubRepo
  let directory: string
  let shardBytes: number

  before(async () => {
    directory = await temporaryDirectory()
    const file = (name: string) => join(directory, name)
    await writeFile(file('config.json'), JSON.stringify({architectures: ['LlamaForCausalLM'], hidden_size: 16, model_type: 'llama'}))
    await writeFile(file('generation_config.json'), JSON.stringify({eos_token_id: 2}))
    await writeFile(file('tokenizer.json'), JSON.stringify({model: {type: 'BPE', vocab: {a: 0}}, version: '1.0'}))
    await writeFile(file('tokenizer_config.json'), JSON.stringify({chat_template: '{{ messages }}'}))
    await writeFile(file('index.json'), JSON.stringify({metadata: {}, weight_map: {'a.weight': 'model-00001-of-00002.safetensors', 'b.weight': 'model-00002-of-00002.safetensors'}}))
    await writeFile(file('bad-index.json'), JSON.stringify({weight_map: {'a.weight': 'model-00001-of-00002.safetensors', 'b.weight': 'model-00009-of-00009.safetensors'}}))
    await writeSafetensors(file('a.safetensors'), 'a.weight', 4096)
    await writeSafetensors(file('b.safetensors'), 'b.weight', 4096)
    await writeSafetensors(file('whole.safetensors'), 'a.weight', 8192)
    await writeFile(file('readme.md'), '# tiny\n')
    shardBytes = (await readFile(file('a.safetensors'))).length
    hub = await FakeHub.start()
    const repo = {
      '.gitattributes': file('readme.md'),
      'README.md': file('readme.md'),
      'config.json': file('config.json'),
      'consolidated.safetensors': file('whole.safetensors'),
      'generation_config.json': file('generation_config.json'),
      'model-00001-of-00002.safetensors': file('a.safetensors'),
      'model-00002-of-00002.safetensors': file('b.safetensors'),
      'model.safetensors.index.json': file('index.json'),
      'onnx/model.onnx': file('whole.safetensors'),
      'original/consolidated.pth': file('whole.safetensors'),
      'pytorch_model.bin': file('whole.safetensors'),
      'tokenizer.json': file('tokenizer.json'),
      'tokenizer_config.json': file('tokenizer_config.json'),
    }
    sharded = await hub.addRepo('test-org/tiny-sharded', repo)
    await hub.addRepo('test-org/tiny-broken-index', {'config.json': file('config.json'), 'model-00001-of-00002.safetensors': file('a.safetensors'), 'model.safetensors.index.json': file('bad-index.json')})
    await hub.addRepo('test-org/tiny-no-weights', {'config.json': file('config.json'), 'onnx/model.onnx': file('whole.safetensors')})
  })

  after(async () => hub?.stop())

  const store = (options: Partial<ConstructorParameters<typeof WeightStore>[0]> = {}) =>
    new WeightStore({cacheDir: join(directory, 'cache'), env: {HF_ENDPOINT: hub.url, SERVICE_DOWNLOAD_RETRY_DELAY_MS: '1'}, log: quiet, ...options})
  const folder = (quantization: string) => join(directory, 'cache', `tiny--0_5B--pytorch--${quantization}`)

  it('fetches the config, tokenizer and the shards the index names into one folder, verified, with a manifest, and never again', async () => {
    const path = await store().resolve({modelName: 'tiny', spec: spec(sharded.id, 'sharded')})
    expect(path).to.equal(folder('sharded'))
    expect((await readdir(path)).sort()).to.deep.equal([...NEEDED, MANIFEST].sort())
    for (const name of NEEDED) expect(await readFile(join(path, name))).to.deep.equal(await readFile(sharded.files.get(name)!.source))
    const manifest = JSON.parse(await readFile(join(path, MANIFEST), 'utf8'))
    expect(manifest).to.include({commit: sharded.commit, model_format: 'pytorch', repo: sharded.id})
    expect(manifest.files.map((file: {name: string}) => file.name).sort()).to.deep.equal(NEEDED)
    expect(manifest.files.find((file: {name: string}) => file.name === 'model-00001-of-00002.safetensors').sha256).to.equal(sharded.files.get('model-00001-of-00002.safetensors')!.sha256)
    for (const skipped of ['consolidated.safetensors', 'pytorch_model.bin', 'onnx/model.onnx', 'original/consolidated.pth']) expect(hub.fileRequests(skipped)).to.have.length(0)

    const before = hub.requests.length
    expect(await store().resolve({modelName: 'tiny', spec: spec(sharded.id, 'sharded')})).to.equal(path)
    expect(hub.requests.length).to.equal(before)
  })

  it('takes every top-level safetensors file of a repo without an index, at the spec\'s model_revision', async () => {
    const repo = 'test-org/tiny-single'
    const commit = (await hub.addRepo(repo, {'config.json': join(directory, 'config.json'), 'model.safetensors': join(directory, 'whole.safetensors'), 'tokenizer.json': join(directory, 'tokenizer.json')})).commit
    const path = await store().resolve({modelName: 'tiny', spec: spec(repo, 'single', commit)})
    expect((await readdir(path)).sort()).to.deep.equal(['config.json', MANIFEST, 'model.safetensors', 'tokenizer.json'])
    expect(hub.requests.some((request) => request.url === `/api/models/${repo}/revision/${commit}?blobs=true`)).to.equal(true)
    expect(hub.requests.filter((request) => request.kind === 'redirect' && request.url.startsWith(`/${repo}/`)).every((request) => request.url.includes(`/resolve/${commit}/`))).to.equal(true)
    expect(JSON.parse(await readFile(join(path, MANIFEST), 'utf8')).revision).to.equal(commit)
  })

  it('resumes a shard whose connection dropped, with a Range request, and shares one download between launches', async () => {
    const shard = 'model-00002-of-00002.safetensors'
    const hold = hub.hold(shard, 1000)
    const listings = () => hub.requests.filter((request) => request.kind === 'listing').length
    const listed = listings()
    const weights = store()
    let joined = false
    // Dropped once the store has the held bytes on disk, so that the break is exactly at byte 1000.
    const atHold = (progress: DownloadProgress) => progress.files.find((file) => file.name === shard)?.downloadedBytes === 1000
    const first = weights.resolve({modelName: 'tiny', spec: spec(sharded.id, 'resumed')}, {onProgress: (progress) => joined && atHold(progress) && hold.drop()})
    await hold.reached
    const second = weights.resolve({modelName: 'tiny', spec: spec(sharded.id, 'resumed')}, {onProgress: (progress) => atHold(progress) && hold.drop()})
    joined = true
    expect(await first).to.equal(folder('resumed'))
    expect(await second).to.equal(folder('resumed'))
    expect(hub.fileRequests(shard).at(-1)?.range).to.equal('bytes=1000-')
    expect(listings() - listed).to.equal(1)
    expect((await readFile(join(folder('resumed'), shard))).length).to.equal(shardBytes)
  })

  it('refuses a repo whose index names shards it lacks, or that has no weights, and leaves nothing behind', async () => {
    const broken = await store().resolve({modelName: 'tiny', spec: spec('test-org/tiny-broken-index', 'broken')}).catch((e) => e)
    expect(broken).to.include({code: 'hub_not_found', status: 502})
    expect(broken.message).to.equal('the repo test-org/tiny-broken-index at main lacks weight files its model.safetensors.index.json names: model-00009-of-00009.safetensors.')
    expect(existsSync(folder('broken'))).to.equal(false)
    const empty = await store().resolve({modelName: 'tiny', spec: spec('test-org/tiny-no-weights', 'empty')}).catch((e) => e)
    expect(empty.message).to.equal('the repo test-org/tiny-no-weights at main has no safetensors (or .bin) weights at its top level; check model_id and model_revision.')
    expect(existsSync(folder('empty'))).to.equal(false)
  })

  it('deletes every file of a repo whose shard arrives corrupt', async () => {
    hub.corruptFile('model-00001-of-00002.safetensors')
    const error = await store().resolve({modelName: 'tiny', spec: spec(sharded.id, 'corrupt')}).catch((e) => e)
    expect(error.code).to.equal('download_corrupt')
    expect(existsSync(folder('corrupt'))).to.equal(false)
  })
})
