/**
 * Diffusers pipeline repositories downloaded from the local hub (test/helpers/fake-hub.ts) by a real `service-local`
 * and launched with `servicectl launch`: the tiny random image and video pipelines of the diffusers engine, written
 * by diffusers' own `save_pretrained` (test/helpers/save_tiny_pipeline.py) and served in the hub's layout with
 * decoys beside them (a `.bin` copy, fp16 variant files, an `onnx/` folder, a top-level `.ckpt`), registered as the
 * catalogue's entries are (`model_src.huggingface.model_id`). Checks exactly which files come, that the pipeline
 * loads and draws at the size asked, that a second launch downloads nothing, `model_revision`, and that a repository
 * lacking a component's weights fails the launch naming it and leaves nothing behind.
 */
import {expect} from 'chai'
import {execa} from 'execa'
import {existsSync} from 'node:fs'
import {copyFile, readdir, readFile} from 'node:fs/promises'
import {join, relative} from 'node:path'
import OpenAI from 'openai'
import {PNG} from 'pngjs'

import {FakeHub, type FakeHubRepo} from '../helpers/fake-hub.js'
import {TEST_CACHE, uvFromPyPI} from '../helpers/python-tools.js'
import {callApi, ROOT, type RunningService, servicectl, startService, temporaryDirectory} from '../helpers/service.js'

const IMAGE_REPO = 'test-org/tiny-sd-pipeline'
const VIDEO_REPO = 'test-org/tiny-wan-pipeline'

async function filesUnder(folder: string): Promise<string[]> {
  const entries = await readdir(folder, {recursive: true, withFileTypes: true})
  return entries.filter((entry) => entry.isFile()).map((entry) => relative(folder, join(entry.parentPath, entry.name)).split('\\').join('/')).sort()
}

describe('diffusers pipeline repositories from the hub (service-local, servicectl, tiny random pipelines)', function () {
  let hub: FakeHub
  let image: FakeHubRepo
  let service: RunningService
  let openai: OpenAI
  /** The files each pipeline's `save_pretrained` wrote: what a launch must download, and nothing else. */
  const pipelines: Record<string, string[]> = {}
  const api = (method: string, path: string, body?: unknown) => callApi(service, method, path, body)
  const cli = (args: string[]) => servicectl(args, {env: {SERVICE_ENDPOINT: service.url}})
  const launch = (name: string, type = 'image') => cli(['launch', '-n', name, '-t', type, '--model-engine', 'diffusers', '--cpu_threads=1'])
  const entry = (name: string) => join(service.home, 'cache', `${name}--diffusers--none`)
  /** The files of a repo whose bytes the hub sent since `from` requests. */
  const fetched = (repo: string, from = 0) =>
    hub.requests
      .slice(from)
      .filter((request) => request.kind === 'file')
      .map((request) => new URL(request.url, hub.url).searchParams)
      .filter((query) => query.get('repo') === repo)
      .map((query) => query.get('file')!)
      .sort()

  before(async function () {
    // A cold run installs torch (CPU) and diffusers into the cached environment the diffusers engine tests share.
    this.timeout(900_000)
    const uv = await uvFromPyPI()
    hub = await FakeHub.start()
    service = await startService({env: {HF_ENDPOINT: hub.url, PATH: `${uv}:${process.env.PATH}`, SERVICE_VIRTUALENV_DIR: join(TEST_CACHE, 'virtualenv')}})
    openai = new OpenAI({apiKey: 'unused', baseURL: `${service.url}/v1`, maxRetries: 0})

    // The engine's environment (made, or found, by launching the generated tiny pipeline) writes the pipelines.
    const made = await api('POST', '/v1/models', {cpu_threads: 1, model_name: 'tiny-random-image', model_type: 'image'})
    expect(made.status, JSON.stringify(made.body)).to.equal(200)
    const environment = (await api('GET', '/v1/virtualenvs')).body.list.find((env: {packages: string[]}) => env.packages.some((name) => name.startsWith('diffusers')))
    await api('DELETE', '/v1/models/tiny-random-image')
    const directory = await temporaryDirectory()
    const recipes = ['tiny-random-image', 'tiny-random-video']
    await execa(join(environment.path, 'bin', 'python'), [join(ROOT, 'test/helpers/save_tiny_pipeline.py'), ...recipes.flatMap((recipe) => [recipe, join(directory, recipe)])])
    for (const recipe of recipes) pipelines[recipe] = await filesUnder(join(directory, recipe))

    const served = (recipe: string) => Object.fromEntries(pipelines[recipe].map((path) => [path, join(directory, recipe, path)]))
    const sd = served('tiny-random-image')
    const decoy = join(directory, 'decoy.bin')
    await copyFile(sd['unet/diffusion_pytorch_model.safetensors'], decoy)
    const decoys = {
      '.gitattributes': sd['model_index.json'],
      'README.md': sd['model_index.json'],
      'onnx/model_index.json': sd['model_index.json'],
      'onnx/unet/model.onnx': decoy,
      'text_encoder/model.fp16.safetensors': sd['text_encoder/model.safetensors'],
      'text_encoder/pytorch_model.bin': decoy,
      'tiny-sd-pruned-emaonly.ckpt': decoy,
      'unet/diffusion_pytorch_model.bin': decoy,
      'unet/diffusion_pytorch_model.fp16.safetensors': sd['unet/diffusion_pytorch_model.safetensors'],
      'vae/diffusion_pytorch_model.fp16.safetensors': sd['vae/diffusion_pytorch_model.safetensors'],
    }
    image = await hub.addRepo(IMAGE_REPO, {...sd, ...decoys})
    await hub.addRepo(`${IMAGE_REPO}-no-vae`, Object.fromEntries(Object.entries(sd).filter(([path]) => path !== 'vae/diffusion_pytorch_model.safetensors')))
    await hub.addRepo(VIDEO_REPO, {...served('tiny-random-video'), 'transformer/diffusion_pytorch_model.bin': decoy})

    const family = (name: string, repo: string, extra: Record<string, unknown> = {}, type = 'image') => ({
      default_generate_config: {guidance_scale: 1, num_inference_steps: 2},
      default_model_config: {height: 32, width: 32},
      model_ability: [type === 'image' ? 'text2image' : 'text2video'],
      model_family: type === 'image' ? 'stable_diffusion' : 'Wan',
      model_name: name,
      model_src: {huggingface: {model_id: repo, model_revision: null, ...extra}},
      version: 2,
    })
    for (const [type, model] of [
      ['image', family('hub-sd', IMAGE_REPO)],
      ['image', family('hub-sd-pinned', IMAGE_REPO, {model_revision: image.commit})],
      ['image', family('hub-sd-no-vae', `${IMAGE_REPO}-no-vae`)],
      ['video', family('hub-wan', VIDEO_REPO, {}, 'video')],
    ] as const) {
      const registered = await api('POST', `/v1/model_registrations/${type}`, {model, persist: false})
      expect(registered.status, JSON.stringify(registered.body)).to.equal(200)
    }
  })

  after(async () => {
    await service?.stop()
    await hub?.stop()
  })

  it('downloads model_index.json and each component\'s config and safetensors, none of the decoys, and draws at the size asked', async function () {
    this.timeout(300_000)
    const launched = await launch('hub-sd')
    expect(launched.exitCode, launched.stderr).to.equal(0)
    expect(fetched(IMAGE_REPO)).to.deep.equal(pipelines['tiny-random-image'])
    expect(await filesUnder(entry('hub-sd'))).to.deep.equal([...pipelines['tiny-random-image'], 'manifest.json'].sort())
    const manifest = JSON.parse(await readFile(join(entry('hub-sd'), 'manifest.json'), 'utf8'))
    expect(manifest).to.include({commit: image.commit, model_format: 'diffusers', repo: IMAGE_REPO})

    const made = await openai.images.generate({model: 'hub-sd', prompt: 'a lighthouse', response_format: 'b64_json', size: '48x32' as '256x256', ...({seed: 1, steps: 2} as object)})
    const png = PNG.sync.read(Buffer.from(made.data![0].b64_json!, 'base64'))
    expect([png.width, png.height]).to.deep.equal([48, 32])
  })

  it('launches again from the cache without asking the hub anything', async function () {
    this.timeout(300_000)
    expect((await cli(['terminate', '--model-uid', 'hub-sd'])).exitCode).to.equal(0)
    const before = hub.requests.length
    const launched = await launch('hub-sd')
    expect(launched.exitCode, launched.stderr).to.equal(0)
    expect(hub.requests.length).to.equal(before)
    expect((await cli(['terminate', '--model-uid', 'hub-sd'])).exitCode).to.equal(0)
  })

  it('takes the files of the registration\'s model_revision', async function () {
    this.timeout(300_000)
    const before = hub.requests.length
    const launched = await launch('hub-sd-pinned')
    expect(launched.exitCode, launched.stderr).to.equal(0)
    const requests = hub.requests.slice(before)
    expect(requests.filter((request) => request.kind === 'listing').map((request) => request.url)).to.deep.equal([`/api/models/${IMAGE_REPO}/revision/${image.commit}?blobs=true`])
    const resolved = requests.filter((request) => request.kind === 'redirect')
    expect(resolved).to.have.length(pipelines['tiny-random-image'].length)
    expect(resolved.every((request) => request.url.startsWith(`/${IMAGE_REPO}/resolve/${image.commit}/`))).to.equal(true)
    expect(JSON.parse(await readFile(join(entry('hub-sd-pinned'), 'manifest.json'), 'utf8')).revision).to.equal(image.commit)
    expect((await cli(['terminate', '--model-uid', 'hub-sd-pinned'])).exitCode).to.equal(0)
  })

  it('fails the launch of a repository lacking a component\'s weights, naming it, and keeps nothing', async function () {
    this.timeout(120_000)
    const launched = await launch('hub-sd-no-vae')
    expect(launched.exitCode).to.not.equal(0)
    expect(launched.stderr).to.include(`the repo ${IMAGE_REPO}-no-vae at main has no safetensors (or .bin) weights for the component vae (AutoencoderKL) in vae/ (it has: config.json)`)
    expect(existsSync(entry('hub-sd-no-vae'))).to.equal(false)
    expect((await api('GET', '/v1/models')).body.data.map((model: {id: string}) => model.id)).to.not.include('hub-sd-no-vae')
  })

  it('downloads and runs a video pipeline (transformer, UMT5 encoder, Wan VAE), without its .bin copy', async function () {
    this.timeout(300_000)
    const launched = await launch('hub-wan', 'video')
    expect(launched.exitCode, launched.stderr).to.equal(0)
    expect(fetched(VIDEO_REPO)).to.deep.equal(pipelines['tiny-random-video'])
    const {body, status} = await api('POST', '/v1/video/generations', {model: 'hub-wan', num_frames: 5, prompt: 'waves', response_format: 'b64_json', seed: 0, size: '32x32', steps: 2})
    expect(status, JSON.stringify(body)).to.equal(200)
    expect(Buffer.from(body.data[0].b64_json, 'base64').subarray(4, 8).toString('latin1')).to.equal('ftyp')
  })
})
