/**
 * The stable-diffusion.cpp engine for real on a real `service-local`: the catalogue's tiny-random-flux, a FLUX.1 GGUF
 * with random weights written on first launch (nothing is downloaded), launched by `servicectl` as a real process and
 * run on the CPU by stable-diffusion-cpp-python in the virtual environment the kernel makes for the engine (cached
 * outside the repository: only a first run builds the binding, which compiles sd.cpp and ggml). Images through the
 * openai client at the size asked and reproducible with a seed; progress per step; sizes the model cannot make refused
 * on `size`; a disconnect that kills the generation while the model keeps serving; and a diffusion-only GGUF, as
 * city96 publishes FLUX.1, refused at launch naming the files sd.cpp needs beside it.
 */
import {expect} from 'chai'
import {execa} from 'execa'
import {readFile} from 'node:fs/promises'
import {join} from 'node:path'
import OpenAI from 'openai'
import {PNG} from 'pngjs'

import {TEST_CACHE, uvFromPyPI} from '../helpers/python-tools.js'
import {callApi, ROOT, type RunningService, servicectl, startService, temporaryDirectory, until} from '../helpers/service.js'

const decode = (base64: string) => PNG.sync.read(Buffer.from(base64, 'base64'))
const MODEL = 'tiny-random-flux'

describe('stable-diffusion.cpp engine (tiny random FLUX.1 GGUF on the CPU, service-local)', function () {
  let service: RunningService
  let openai: OpenAI
  const api = (method: string, path: string, body?: unknown) => callApi(service, method, path, body)
  const generate = (body: Record<string, unknown>, signal?: AbortSignal) =>
    fetch(`${service.url}/v1/images/generations`, {body: JSON.stringify({model: MODEL, ...body}), headers: {'content-type': 'application/json'}, method: 'POST', signal})

  before(async function () {
    // A cold run builds stable-diffusion-cpp-python (sd.cpp and ggml, with CMake) into the cached environment.
    this.timeout(45 * 60_000)
    const uv = await uvFromPyPI()
    service = await startService({env: {PATH: `${uv}:${process.env.PATH}`, SERVICE_VIRTUALENV_DIR: join(TEST_CACHE, 'virtualenv')}})
    openai = new OpenAI({apiKey: 'unused', baseURL: `${service.url}/v1`, maxRetries: 0})
    const launched = await servicectl(['launch', '-n', MODEL, '-t', 'image', '--model-engine', 'stable-diffusion.cpp', '--cpu_threads', '2'], {env: {SERVICE_ENDPOINT: service.url}})
    expect(launched.exitCode, launched.stderr).to.equal(0)
  })

  after(async () => service?.stop())

  it('runs the GGUF on the stable-diffusion.cpp engine', async () => {
    const {body} = await api('GET', '/v1/models')
    expect(body.data.find((model: {id: string}) => model.id === MODEL)).to.deep.include({model_ability: ['text2image'], model_engine: 'stable-diffusion.cpp', model_format: 'ggufv2', model_type: 'image'})
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

  it('refuses a diffusion-only GGUF without its VAE and text encoders, naming them', async function () {
    this.timeout(300_000)
    const {body: environments} = await api('GET', '/v1/virtualenvs')
    const environment = environments.list.find((each: {packages: string[]}) => each.packages.some((name) => name.startsWith('stable-diffusion-cpp-python')))
    const folder = await temporaryDirectory()
    const file = join(folder, 'flux-transformer.gguf')
    await execa(join(environment.path, 'bin', 'python'), [join(ROOT, 'plugins/engine-stable-diffusion-cpp/python/tiny_flux.py'), file, '--diffusion-only'])
    const registered = await api('POST', '/v1/model_registrations/image', {model: JSON.stringify({model_name: 'flux-transformer-only', model_uri: file}), persist: false})
    expect(registered.status, JSON.stringify(registered.body)).to.equal(200)

    const missingFile = await api('POST', '/v1/models', {model_engine: 'stable-diffusion.cpp', model_name: 'flux-transformer-only', model_type: 'image', vae: join(folder, 'absent.safetensors')})
    expect(missingFile.status).to.equal(400)
    expect(missingFile.body.error.param, JSON.stringify(missingFile.body)).to.equal('vae')

    const refused = await api('POST', '/v1/models', {model_engine: 'stable-diffusion.cpp', model_name: 'flux-transformer-only', model_type: 'image'})
    expect(refused.status).to.be.at.least(400)
    expect(JSON.stringify(refused.body)).to.match(/holds only the diffusion model.*a VAE \(vae\) and a text encoder \(clip_l or t5xxl\)/)
  })
})
