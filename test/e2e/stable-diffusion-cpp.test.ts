/**
 * The stable-diffusion.cpp engine for real on a real `service-local`: the catalogue's tiny-random-flux, a FLUX.1 GGUF
 * with random weights written on first launch (nothing is downloaded), launched by `servicectl` as a real process and
 * run on the CPU by stable-diffusion-cpp-python in the virtual environment the kernel makes for the engine (cached
 * outside the repository: only a first run builds the binding, which compiles sd.cpp and ggml). Images through the
 * openai client at the size asked and reproducible with a seed; progress per step; sizes the model cannot make refused
 * on `size`; a disconnect that kills the generation while the model keeps serving; edits, variations and inpainting
 * from uploaded pictures through the binding's init and mask images (the tiny file holds a VAE encoder), bad uploads
 * refused naming the field, none left on disk; a diffusion-only GGUF, as city96 publishes FLUX.1, refused at launch
 * naming the files sd.cpp needs beside it, and launched from the local hub (test/helpers/fake-hub.ts) with the VAE and
 * text encoder its registration lists as companions downloaded beside it (the tiny model's parts, written apart).
 */
import {expect} from 'chai'
import {execa} from 'execa'
import {readdir, readFile, rm} from 'node:fs/promises'
import {join} from 'node:path'
import OpenAI, {toFile} from 'openai'
import {PNG} from 'pngjs'

import {FakeHub} from '../helpers/fake-hub.js'
import {postForm, solidPng} from '../helpers/media.js'
import {TEST_CACHE, uvFromPyPI} from '../helpers/python-tools.js'
import {callApi, ROOT, type RunningService, servicectl, startService, temporaryDirectory, until} from '../helpers/service.js'

const decode = (base64: string) => PNG.sync.read(Buffer.from(base64, 'base64'))
const MODEL = 'tiny-random-flux'
const TINY_FLUX_PY = join(ROOT, 'plugins/engine-stable-diffusion-cpp/python/tiny_flux.py')

describe('stable-diffusion.cpp engine (tiny random FLUX.1 GGUF on the CPU, service-local)', function () {
  let service: RunningService
  let openai: OpenAI
  let uploads: string
  let hub: FakeHub
  const api = (method: string, path: string, body?: unknown) => callApi(service, method, path, body)
  const generate = (body: Record<string, unknown>, signal?: AbortSignal) =>
    fetch(`${service.url}/v1/images/generations`, {body: JSON.stringify({model: MODEL, ...body}), headers: {'content-type': 'application/json'}, method: 'POST', signal})

  before(async function () {
    // A cold run builds stable-diffusion-cpp-python (sd.cpp and ggml, with CMake) into the cached environment.
    this.timeout(45 * 60_000)
    const uv = await uvFromPyPI()
    // Uploads are written to the temporary folder, which the edit tests watch.
    uploads = await temporaryDirectory('service-uploads-')
    hub = await FakeHub.start()
    service = await startService({env: {HF_ENDPOINT: hub.url, PATH: `${uv}:${process.env.PATH}`, SERVICE_VIRTUALENV_DIR: join(TEST_CACHE, 'virtualenv'), TMPDIR: uploads}})
    openai = new OpenAI({apiKey: 'unused', baseURL: `${service.url}/v1`, maxRetries: 0})
    const launched = await servicectl(['launch', '-n', MODEL, '-t', 'image', '--model-engine', 'stable-diffusion.cpp', '--cpu_threads', '2'], {env: {SERVICE_ENDPOINT: service.url}})
    expect(launched.exitCode, launched.stderr).to.equal(0)
  })

  after(async () => {
    await service?.stop()
    await hub?.stop()
    await rm(uploads, {force: true, recursive: true})
  })

  it('runs the GGUF on the stable-diffusion.cpp engine', async () => {
    const {body} = await api('GET', '/v1/models')
    expect(body.data.find((model: {id: string}) => model.id === MODEL)).to.deep.include({model_ability: ['text2image', 'image2image', 'inpainting'], model_engine: 'stable-diffusion.cpp', model_format: 'ggufv2', model_type: 'image'})
  })

  it('makes PNGs of the size asked, the same for the same seed and different for another', async function () {
    this.timeout(300_000)
    const make = async (seed: number, size = '64x64') =>
      (await openai.images.generate({model: MODEL, prompt: 'a lighthouse', response_format: 'b64_json', size: size as '256x256', ...({seed, steps: 2} as object)})).data![0].b64_json!
    const first = await make(1)
    expect([decode(first).width, decode(first).height]).to.deep.equal([64, 64])
    expect(await make(1)).to.equal(first)
    expect(await make(2)).to.not.equal(first)
    const wide = decode(await make(1, '96x32'))
    expect([wide.width, wide.height]).to.deep.equal([96, 32])
  })

  it('streams each step done, then the image', async function () {
    this.timeout(300_000)
    const streamed = await generate({prompt: 'steps', seed: 1, size: '32x32', steps: 3, stream: true})
    const events = (await streamed.text()).split('\n\n').filter(Boolean).map((block) => JSON.parse(/^data: (.*)$/m.exec(block)![1]))
    expect(events.map((event) => event.step ?? event.type)).to.deep.equal([1, 2, 3, 'image_generation.completed'])
    expect(decode(events.at(-1).b64_json).width).to.equal(32)
  })

  it('refuses a size the model cannot make with a 400 on size, and keeps serving', async () => {
    // FLUX works on 16-pixel blocks: 24 passes the service's own check (multiples of 8) and is the model's to refuse.
    for (const size of ['24x24', '100x100']) {
      const error = await openai.images.generate({model: MODEL, prompt: 'x', size: size as '256x256'}).catch((caught: unknown) => caught)
      expect(error, size).to.be.instanceOf(OpenAI.BadRequestError)
      expect((error as InstanceType<typeof OpenAI.BadRequestError>).param, size).to.equal('size')
    }

    expect((await generate({prompt: 'after', seed: 3, size: '32x32', steps: 1})).status).to.equal(200)
  })

  it('answers each request with its own image after one the model refused mid-generation', async function () {
    this.timeout(300_000)
    const image = async (seed: number) => (await openai.images.generate({model: MODEL, prompt: 'own', size: '32x32' as '256x256', ...({seed, steps: 1} as object)})).data![0].b64_json!
    const [first, second] = [await image(7), await image(8)]
    // sd.cpp itself refuses an argument it does not know, in the worker that generates.
    const refused = await openai.images.generate({model: MODEL, prompt: 'x', size: '32x32' as '256x256', ...({kwargs: {no_such_argument: 1}} as object)}).catch((caught: unknown) => caught)
    expect(refused).to.be.instanceOf(OpenAI.BadRequestError)
    expect([await image(7), await image(8)], 'the images of these seeds, not the ones before them').to.deep.equal([first, second])
  })

  it('kills the generation when the client goes away, and serves the next request', async function () {
    this.timeout(300_000)
    const controller = new AbortController()
    const response = await generate({prompt: 'forever', size: '256x256', steps: 500, stream: true}, controller.signal)
    await response.body!.getReader().read()
    controller.abort()
    const log = join(service.home, 'logs', 'models', `${MODEL}.log`)
    const stoppedAt = await until(async () => /generation stopped at step (\d+) of 500/.exec(await readFile(log, 'utf8').catch(() => ''))?.[1], 'the generation to stop', 120_000)
    expect(Number(stoppedAt)).to.be.below(500)
    const next = await openai.images.generate({model: MODEL, prompt: 'next', size: '32x32' as '256x256', ...({seed: 4, steps: 1} as object)})
    expect(decode(next.data![0].b64_json!).width).to.equal(32)
  })

  it('edits a picture, with and without a mask, and varies it, at the size asked or the picture\'s own', async function () {
    this.timeout(300_000)
    const picture = await toFile(solidPng(48, 32, [200, 40, 40]), 'picture.png', {type: 'image/png'})
    const mask = new PNG({height: 32, width: 48})
    // Transparent where it repaints, as OpenAI's edit masks are.
    for (let index = 0; index < 48 * 32; index++) mask.data.set(index % 48 < 24 ? [0, 0, 0, 0] : [0, 0, 0, 255], index * 4)
    const extra = {seed: 1, steps: 2} as object
    const edited = await openai.images.edit({image: picture, model: MODEL, prompt: 'a blue door', size: '64x64' as '256x256', ...extra})
    expect([decode(edited.data![0].b64_json!).width, decode(edited.data![0].b64_json!).height]).to.deep.equal([64, 64])
    const again = await openai.images.edit({image: await toFile(solidPng(48, 32, [200, 40, 40]), 'picture.png', {type: 'image/png'}), model: MODEL, prompt: 'a blue door', size: '64x64' as '256x256', ...extra})
    expect(again.data![0].b64_json).to.equal(edited.data![0].b64_json)

    const painted = await openai.images.edit({image: await toFile(solidPng(48, 32, [200, 40, 40]), 'picture.png', {type: 'image/png'}), mask: await toFile(PNG.sync.write(mask), 'mask.png', {type: 'image/png'}), model: MODEL, prompt: 'a window', ...extra})
    expect([decode(painted.data![0].b64_json!).width, decode(painted.data![0].b64_json!).height]).to.deep.equal([48, 32])
    expect(painted.data![0].b64_json).to.not.equal(edited.data![0].b64_json)

    const varied = await openai.images.createVariation({image: await toFile(solidPng(32, 32, [10, 200, 10]), 'picture.png', {type: 'image/png'}), model: MODEL, n: 2, ...extra})
    expect(varied.data!.map((image) => decode(image.b64_json!).width)).to.deep.equal([32, 32])

    const {body, status} = await postForm(service, '/v1/images/inpainting', {model: MODEL, prompt: 'paint', seed: '5', steps: '2'}, {image: solidPng(32, 16, [0, 0, 200]), mask_image: solidPng(32, 16, [255, 255, 255])})
    expect(status, JSON.stringify(body)).to.equal(200)
    expect(decode(body.data[0].b64_json).height).to.equal(16)
  })

  it('streams the steps an edit runs: fewer than asked, as its strength says', async function () {
    this.timeout(300_000)
    const body = new FormData()
    for (const [name, value] of Object.entries({kwargs: '{"strength": 0.5}', model: MODEL, prompt: 'half', seed: '1', steps: '4', stream: 'true'})) body.append(name, value)
    body.append('image', new Blob([solidPng(32, 32, [90, 90, 90])]), 'image.png')
    const streamed = await fetch(`${service.url}/v1/images/edits`, {body, method: 'POST'})
    const events = (await streamed.text()).split('\n\n').filter(Boolean).map((block) => JSON.parse(/^data: (.*)$/m.exec(block)![1]))
    // sd.cpp starts an edit of strength 0.5 at step 2 of 4 and runs the 3 sigmas from there.
    expect(events.map((event) => (event.step ? `${event.step}/${event.steps}` : event.type))).to.deep.equal(['1/3', '2/3', '3/3', 'image_edit.completed'])
  })

  it('refuses a mask of another size on mask, a file that is no picture on image, an unreadable mask on mask_image, and keeps no upload', async () => {
    const picture = solidPng(32, 32, [1, 2, 3])
    const cases: Array<[Promise<{status: number; body: any}>, string, RegExp]> = [
      [postForm(service, '/v1/images/edits', {model: MODEL, prompt: 'x'}, {image: picture, mask: solidPng(16, 32, [255, 255, 255])}), 'mask', /mask` is 16x32 but the image is 32x32/],
      [postForm(service, '/v1/images/edits', {model: MODEL, prompt: 'x'}, {image: Buffer.from('not a picture at all')}), 'image', /is not an image this service reads/],
      [postForm(service, '/v1/images/inpainting', {model: MODEL, prompt: 'x'}, {image: picture, mask_image: solidPng(32, 8, [255, 255, 255])}), 'mask_image', /32x8 but the image is 32x32/],
      // Its header is whole, so the service takes it for a picture; the engine, which decodes it, names the field it came in.
      [postForm(service, '/v1/images/inpainting', {model: MODEL, prompt: 'x'}, {image: picture, mask_image: solidPng(32, 32, [255, 255, 255]).subarray(0, 60)}), 'mask_image', /`mask_image` cannot be read as an image/],
      [postForm(service, '/v1/images/edits', {model: MODEL, prompt: 'x'}, {image: solidPng(40, 40, [1, 2, 3])}), 'size', /multiples of 16 pixels \(asked 40x40\); try 32x32/],
    ]
    for (const [answer, param, message] of cases) {
      const {body, status} = await answer
      expect([status, body.error?.param], JSON.stringify(body)).to.deep.equal([400, param])
      expect(body.error.message).to.match(message)
    }

    // Node keeps its compile cache in a folder there; uploads are files.
    expect((await readdir(uploads, {withFileTypes: true})).filter((entry) => entry.isFile()).map((entry) => entry.name)).to.deep.equal([])
  })

  /** The engine's Python, which writes the tiny model's parts. */
  const enginePython = async () => {
    const {body: environments} = await api('GET', '/v1/virtualenvs')
    const environment = environments.list.find((each: {packages: string[]}) => each.packages.some((name) => name.startsWith('stable-diffusion-cpp-python')))
    return join(environment.path, 'bin', 'python')
  }

  it('advertises text2image alone for a GGUF without a VAE encoder, and refuses edits on model', async function () {
    this.timeout(300_000)
    const file = join(await temporaryDirectory(), 'flux-without-encoder.gguf')
    await execa(await enginePython(), [TINY_FLUX_PY, file, '--without-vae-encoder'])
    const family = {default_model_config: {height: 32, width: 32}, model_ability: ['text2image', 'image2image', 'inpainting'], model_name: 'flux-without-encoder', model_uri: file}
    expect((await api('POST', '/v1/model_registrations/image', {model: JSON.stringify(family), persist: false})).status).to.equal(200)
    const launched = await api('POST', '/v1/models', {cpu_threads: 2, model_engine: 'stable-diffusion.cpp', model_name: 'flux-without-encoder', model_type: 'image'})
    expect(launched.status, JSON.stringify(launched.body)).to.equal(200)
    const {body} = await api('GET', '/v1/models')
    expect(body.data.find((model: {id: string}) => model.id === 'flux-without-encoder').model_ability).to.deep.equal(['text2image'])
    const refused = await postForm(service, '/v1/images/edits', {model: 'flux-without-encoder', prompt: 'x'}, {image: solidPng(32, 32, [1, 2, 3])})
    expect([refused.status, refused.body.error?.param], JSON.stringify(refused.body)).to.deep.equal([400, 'model'])
    expect((await openai.images.generate({model: 'flux-without-encoder', prompt: 'still draws', size: '32x32' as '256x256'})).data).to.have.length(1)
    await api('DELETE', '/v1/models/flux-without-encoder')
  })

  it('refuses a diffusion-only GGUF without its VAE and text encoders, naming them', async function () {
    this.timeout(300_000)
    const folder = await temporaryDirectory()
    const file = join(folder, 'flux-transformer.gguf')
    await execa(await enginePython(), [TINY_FLUX_PY, file, '--diffusion-only'])
    const registered = await api('POST', '/v1/model_registrations/image', {model: JSON.stringify({model_name: 'flux-transformer-only', model_uri: file}), persist: false})
    expect(registered.status, JSON.stringify(registered.body)).to.equal(200)

    const missingFile = await api('POST', '/v1/models', {model_engine: 'stable-diffusion.cpp', model_name: 'flux-transformer-only', model_type: 'image', vae: join(folder, 'absent.safetensors')})
    expect(missingFile.status).to.equal(400)
    expect(missingFile.body.error.param, JSON.stringify(missingFile.body)).to.equal('vae')

    const refused = await api('POST', '/v1/models', {model_engine: 'stable-diffusion.cpp', model_name: 'flux-transformer-only', model_type: 'image'})
    expect(refused.status).to.be.at.least(400)
    expect(JSON.stringify(refused.body)).to.match(/holds only the diffusion model.*a VAE \(vae\) and a text encoder \(clip_l or t5xxl\)/)
  })

  it('downloads the VAE and text encoder a diffusion-only GGUF lists as companions and gives them to sd.cpp; a launch parameter overrides one', async function () {
    this.timeout(300_000)
    const folder = await temporaryDirectory()
    const python = await enginePython()
    const part = async (name: string, option: string) => {
      await execa(python, [TINY_FLUX_PY, join(folder, name), option])
      return join(folder, name)
    }

    await hub.addRepo('test-org/tiny-flux-gguf', {'tiny-flux-F16.gguf': await part('transformer.gguf', '--diffusion-only')})
    await hub.addRepo('test-org/tiny-flux', {'ae.gguf': await part('vae.gguf', '--vae')})
    await hub.addRepo('test-org/tiny-flux-encoders', {'text_encoders/clip_l.gguf': await part('clip_l.gguf', '--clip-l')})
    const companions = [
      {file_name: 'ae.gguf', model_id: 'test-org/tiny-flux', role: 'vae'},
      {file_name: 'text_encoders/clip_l.gguf', model_id: 'test-org/tiny-flux-encoders', role: 'clip_l'},
    ]
    const family = {
      default_generate_config: {num_inference_steps: 2},
      default_model_config: {height: 32, width: 32},
      model_ability: ['text2image', 'image2image', 'inpainting'],
      model_family: 'stable_diffusion',
      model_name: 'hub-flux',
      model_src: {huggingface: {gguf_companion_files: companions, gguf_model_file_name_template: 'tiny-flux-{quantization}.gguf', gguf_model_id: 'test-org/tiny-flux-gguf', gguf_quantizations: ['F16']}},
    }
    expect((await api('POST', '/v1/model_registrations/image', {model: family, persist: false})).status).to.equal(200)
    const launch = (uid: string, ...extra: string[]) =>
      servicectl(['launch', '-n', 'hub-flux', '-u', uid, '-t', 'image', '--model-engine', 'stable-diffusion.cpp', '--cpu_threads', '2', ...extra], {env: {SERVICE_ENDPOINT: service.url}})
    const launched = await launch('hub-flux')
    expect(launched.exitCode, launched.stderr).to.equal(0)

    const fetched = () => hub.fileRequests().map((request) => new URL(request.url, hub.url).searchParams.get('file'))
    expect(fetched()).to.deep.equal(['tiny-flux-F16.gguf', 'ae.gguf', 'text_encoders/clip_l.gguf'])
    const cached = (entry: string, file: string) => join(service.home, 'cache', entry, file)
    const vae = cached('test-org--tiny-flux--ae--gguf--none', 'ae.gguf')
    const clip = cached('test-org--tiny-flux-encoders--text_encoders--clip_l--gguf--none', 'text_encoders/clip_l.gguf')
    expect(await readFile(vae)).to.deep.equal(await readFile(join(folder, 'vae.gguf')))
    expect(JSON.parse(await readFile(cached('test-org--tiny-flux--ae--gguf--none', 'manifest.json'), 'utf8'))).to.include({repo: 'test-org/tiny-flux'})
    const log = await readFile(join(service.home, 'logs', 'models', 'hub-flux.log'), 'utf8')
    expect(log).to.include(`with vae ${vae} with clip_l ${clip} on port`)

    // The VAE brings its encoder: the model edits too.
    const {body} = await api('GET', '/v1/models')
    expect(body.data.find((model: {id: string}) => model.id === 'hub-flux').model_ability).to.deep.equal(['text2image', 'image2image', 'inpainting'])
    const made = await openai.images.generate({model: 'hub-flux', prompt: 'a lighthouse', size: '48x32' as '256x256', ...({seed: 1} as object)})
    expect([decode(made.data![0].b64_json!).width, decode(made.data![0].b64_json!).height]).to.deep.equal([48, 32])
    const edited = await openai.images.edit({image: await toFile(solidPng(32, 32, [9, 9, 9]), 'picture.png', {type: 'image/png'}), model: 'hub-flux', prompt: 'x'})
    expect(decode(edited.data![0].b64_json!).width).to.equal(32)

    // A second model of the same family finds them cached; one naming its own VAE gets that one.
    const own = await launch('hub-flux-own-vae', '--vae', join(folder, 'vae.gguf'))
    expect(own.exitCode, own.stderr).to.equal(0)
    expect(fetched()).to.have.length(3)
    expect(await readFile(join(service.home, 'logs', 'models', 'hub-flux-own-vae.log'), 'utf8')).to.include(`with vae ${join(folder, 'vae.gguf')} with clip_l ${clip} on port`)

    // The companions in use stay in the cache until the models using them end.
    const remove = (version: string) => api('DELETE', `/v1/cache/models?model_version=${version}`)
    const refused = await remove('test-org--tiny-flux--ae--gguf--none')
    expect([refused.status, refused.body.error?.message]).to.deep.equal([409, 'test-org--tiny-flux--ae--gguf--none is in use by model hub-flux on worker local; terminate it first.'])
    expect((await api('DELETE', '/v1/models/hub-flux')).status).to.equal(200)
    expect((await remove('test-org--tiny-flux--ae--gguf--none')).status).to.equal(200)
    expect((await remove('test-org--tiny-flux-encoders--text_encoders--clip_l--gguf--none')).status).to.equal(409)
  })
})
