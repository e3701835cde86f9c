/**
 * The diffusers engine for real on a real `service-local`: the catalogue's tiny-random-image and tiny-random-video,
 * pipelines with random weights that diffusers builds from a config with a fixed seed, made on first launch (nothing is
 * downloaded) and run on the CPU in the virtual environment the kernel makes for the engine (cached outside the
 * repository, so only a first run installs torch and diffusers). Images through the openai client, reproducible with a
 * seed; progress and a disconnect that stops the generation; edits and inpainting; an MP4 video; a size the pipeline
 * cannot make refused on its field; a model that needs a GPU refused at launch with what it needs.
 */
import {expect} from 'chai'
import {mkdir, readFile, rm, writeFile} from 'node:fs/promises'
import {join} from 'node:path'
import OpenAI, {toFile} from 'openai'
import {PNG} from 'pngjs'

import {TEST_CACHE, uvFromPyPI} from '../helpers/python-tools.js'
import {callApi, type RunningService, startService, temporaryDirectory, until} from '../helpers/service.js'

const decode = (base64: string) => PNG.sync.read(Buffer.from(base64, 'base64'))

describe('diffusers engine (tiny random pipelines on the CPU, service-local)', function () {
  let service: RunningService
  let openai: OpenAI
  const api = (method: string, path: string, body?: unknown) => callApi(service, method, path, body)

  before(async function () {
    // A cold run installs torch (CPU), diffusers and transformers into the cached environment: a few minutes on 2 cores.
    this.timeout(900_000)
    const uv = await uvFromPyPI()
    service = await startService({env: {PATH: `${uv}:${process.env.PATH}`, SERVICE_VIRTUALENV_DIR: join(TEST_CACHE, 'virtualenv')}})
    openai = new OpenAI({apiKey: 'unused', baseURL: `${service.url}/v1`, maxRetries: 0})
    for (const [name, type] of [['tiny-random-image', 'image'], ['tiny-random-video', 'video']]) {
      const launched = await api('POST', '/v1/models', {cpu_threads: 1, model_name: name, model_type: type})
      expect(launched.status, JSON.stringify(launched.body)).to.equal(200)
    }
  })

  after(async () => service?.stop())

  it('runs both on the diffusers engine', async () => {
    const {body} = await api('GET', '/v1/models')
    const byId = Object.fromEntries(body.data.map((model: {id: string}) => [model.id, model]))
    expect(byId['tiny-random-image']).to.deep.include({model_engine: 'diffusers', model_format: 'diffusers', model_type: 'image'})
    expect(byId['tiny-random-video']).to.deep.include({model_ability: ['text2video'], model_engine: 'diffusers', model_type: 'video'})
  })

  it('makes images of the size asked, the same for the same seed and different for another', async () => {
    const make = async (seed: number) =>
      (await openai.images.generate({model: 'tiny-random-image', n: 2, prompt: 'a red barn', response_format: 'b64_json', size: '32x32' as '256x256', ...({seed, steps: 2} as object)})).data!.map((image) => image.b64_json!)
    const first = await make(1)
    expect(first).to.have.length(2)
    expect([decode(first[0]).width, decode(first[0]).height]).to.deep.equal([32, 32])
    expect(first[0]).to.not.equal(first[1])
    expect(await make(1)).to.deep.equal(first)
    expect((await make(2))[0]).to.not.equal(first[0])
  })

  it('logs what each image took to generate, encode as PNG and as base64, in the model\'s log', async () => {
    await openai.images.generate({model: 'tiny-random-image', n: 2, prompt: 'timed', response_format: 'b64_json', size: '32x32' as '256x256', ...({seed: 3, steps: 2} as object)})
    const log = await readFile(join(service.home, 'logs', 'models', 'tiny-random-image.log'), 'utf8')
    for (const index of [1, 2]) expect(log).to.match(new RegExp(`image ${index} of 2: generated in [0-9.]+ s, PNG [0-9.]+ s, base64 [0-9.]+ s`))
  })

  it('streams each step done, and stops the generation when the client goes away, decoding nothing', async () => {
    const streamed = await fetch(`${service.url}/v1/images/generations`, {
      body: JSON.stringify({model: 'tiny-random-image', prompt: 'steps', seed: 1, size: '32x32', steps: 3, stream: true}),
      headers: {'content-type': 'application/json'},
      method: 'POST',
    })
    const events = (await streamed.text()).split('\n\n').filter(Boolean).map((block) => JSON.parse(/^data: (.*)$/m.exec(block)![1]))
    expect(events.map((event) => event.step ?? event.type)).to.deep.equal([1, 2, 3, 'image_generation.completed'])

    const controller = new AbortController()
    const response = await fetch(`${service.url}/v1/images/generations`, {
      body: JSON.stringify({model: 'tiny-random-image', prompt: 'forever', size: '32x32', steps: 500, stream: true}),
      headers: {'content-type': 'application/json'},
      method: 'POST',
      signal: controller.signal,
    })
    await response.body!.getReader().read()
    controller.abort()
    const log = join(service.home, 'logs', 'models', 'tiny-random-image.log')
    const stoppedAt = await until(async () => /generation stopped at step (\d+) of 500: the client went away; the VAE decoder ran 0 times/.exec(await readFile(log, 'utf8').catch(() => ''))?.[1], 'the generation to stop', 60_000)
    expect(Number(stoppedAt)).to.be.below(500)
  })

  /**
   * Sends an unstreamed generation, goes away 2 s later (long enough for it to reach the program, far too short for
   * its steps), and answers the step at which the model's log says it stopped, having decoded nothing.
   */
  async function abandoned(route: string, body: {model: string; steps: number; [field: string]: unknown}): Promise<number> {
    const controller = new AbortController()
    const answer = fetch(`${service.url}${route}`, {body: JSON.stringify(body), headers: {'content-type': 'application/json'}, method: 'POST', signal: controller.signal}).catch((error: Error) => error)
    await new Promise((resolve) => setTimeout(resolve, 2000))
    controller.abort()
    expect(await answer).to.be.instanceOf(Error)
    const log = join(service.home, 'logs', 'models', `${body.model}.log`)
    const stopped = new RegExp(`generation stopped at step (\\d+) of ${body.steps}: the client went away; the VAE decoder ran 0 times`)
    return Number(await until(async () => stopped.exec(await readFile(log, 'utf8').catch(() => ''))?.[1], `${body.model} to stop`, 60_000))
  }

  it('stops a generation whose client goes away before its answer, though no step is reported to it, decoding nothing', async () => {
    expect(await abandoned('/v1/images/generations', {model: 'tiny-random-image', prompt: 'unseen', size: '128x128', steps: 900})).to.be.below(900)
  })

  it('stops a video whose client goes away before its frames are decoded', async () => {
    expect(await abandoned('/v1/video/generations', {model: 'tiny-random-video', num_frames: 5, prompt: 'unseen', size: '32x32', steps: 1000})).to.be.below(1000)
  })

  it("refuses more steps than the model's scheduler has noise levels for, naming steps and its limit, and keeps serving", async () => {
    // tiny-random-image's DDIM scheduler has 1000 noise levels, its steps offset by 1: 1000 steps would ask for level 1000.
    const request = {model: 'tiny-random-image', prompt: 'too many', size: '32x32', steps: 1000}
    const refused = await api('POST', '/v1/images/generations', request)
    expect(refused.status, JSON.stringify(refused.body)).to.equal(400)
    expect(refused.body.error.param).to.equal('steps')
    expect(refused.body.error.message).to.contain('steps must be at most 999 for this model: its scheduler (DDIMScheduler) has 1000 noise levels')
    const streamed = await fetch(`${service.url}/v1/images/generations`, {body: JSON.stringify({...request, stream: true}), headers: {'content-type': 'application/json'}, method: 'POST'})
    // Refused before its first event, a streamed request gets the HTTP error too.
    expect(streamed.status).to.equal(400)
    expect(((await streamed.json()) as {error: {param: string}}).error.param).to.equal('steps')

    const edit = new FormData()
    for (const [name, value] of Object.entries({model: 'tiny-random-image', prompt: 'too many', steps: '1000'})) edit.append(name, value)
    edit.append('image', new Blob([PNG.sync.write(new PNG({height: 32, width: 32}))]), 'image.png')
    const refusedEdit = await fetch(`${service.url}/v1/images/edits`, {body: edit, method: 'POST'})
    expect(refusedEdit.status).to.equal(400)
    expect(((await refusedEdit.json()) as {error: {param: string}}).error.param).to.equal('steps')
    expect((await openai.images.generate({model: 'tiny-random-image', prompt: 'after', response_format: 'b64_json', size: '32x32' as '256x256', ...({steps: 2} as object)})).data).to.have.length(1)
  })

  it('edits and repaints an uploaded picture, keeping its size', async () => {
    const picture = new PNG({height: 32, width: 32})
    picture.data.fill(128)
    const bytes = PNG.sync.write(picture)
    const edited = await openai.images.edit({image: await toFile(bytes, 'picture.png', {type: 'image/png'}), model: 'tiny-random-image', prompt: 'a blue door'})
    expect(decode(edited.data![0].b64_json!).width).to.equal(32)
    const body = new FormData()
    for (const [name, value] of Object.entries({model: 'tiny-random-image', prompt: 'paint', seed: '3', steps: '2'})) body.append(name, value)
    body.append('image', new Blob([bytes]), 'image.png')
    body.append('mask_image', new Blob([bytes]), 'mask.png')
    const painted = await fetch(`${service.url}/v1/images/inpainting`, {body, method: 'POST'})
    expect(painted.status).to.equal(200)
    expect(decode(((await painted.json()) as {data: Array<{b64_json: string}>}).data[0].b64_json).height).to.equal(32)
  })

  it('makes edits and variations at the size asked, from a picture of another size', async () => {
    const picture = new PNG({height: 64, width: 64})
    picture.data.fill(128)
    const sizeOf = async (path: string, fields: Record<string, string>) => {
      const body = new FormData()
      for (const [name, value] of Object.entries({model: 'tiny-random-image', prompt: 'smaller', seed: '1', steps: '2', ...fields})) body.append(name, value)
      body.append('image', new Blob([PNG.sync.write(picture)]), 'image.png')
      const answer = await fetch(`${service.url}${path}`, {body, method: 'POST'})
      const json = (await answer.json()) as {data: Array<{b64_json: string}>}
      expect(answer.status, JSON.stringify(json)).to.equal(200)
      const image = decode(json.data[0].b64_json)
      return [image.width, image.height]
    }
    expect(await sizeOf('/v1/images/edits', {size: '32x32'})).to.deep.equal([32, 32])
    expect(await sizeOf('/v1/images/variations', {size: '32x48'})).to.deep.equal([32, 48])
    expect(await sizeOf('/v1/images/edits', {kwargs: JSON.stringify({height: 32, width: 48})})).to.deep.equal([48, 32])
  })

  it('refuses steps that leave an edit none to run, and pipeline arguments the service sets itself, naming the field', async () => {
    const edit = async (fields: Record<string, string>) => {
      const body = new FormData()
      for (const [name, value] of Object.entries({model: 'tiny-random-image', prompt: 'few', ...fields})) body.append(name, value)
      body.append('image', new Blob([PNG.sync.write(new PNG({height: 32, width: 32}))]), 'image.png')
      const answer = await fetch(`${service.url}/v1/images/edits`, {body, method: 'POST'})
      return {body: (await answer.json()) as {error: {message: string; param: string}}, status: answer.status}
    }
    // At the default strength, 0.8, one step runs int(1 × 0.8) = 0 of them.
    const few = await edit({steps: '1'})
    expect([few.status, few.body.error.param], JSON.stringify(few.body)).to.deep.equal([400, 'steps'])
    expect(few.body.error.message).to.contain('steps must be at least 2 for this edit: at strength 0.8')
    expect((await edit({kwargs: JSON.stringify({strength: 0.25}), steps: '3'})).body.error.message).to.contain('at least 4')
    for (const kwargs of [{output_type: 'latent'}, {generator: 1}, {return_dict: false}, {callback_on_step_end: null}]) {
      const refused = await api('POST', '/v1/images/generations', {kwargs, model: 'tiny-random-image', prompt: 'managed', size: '32x32', steps: 1})
      expect([refused.status, refused.body.error?.param], JSON.stringify(refused.body)).to.deep.equal([400, 'kwargs'])
      expect(refused.body.error.message).to.contain(`\`kwargs\` cannot set \`${Object.keys(kwargs)[0]}\``)
    }
    expect((await edit({seed: '1', steps: '2'})).status).to.equal(200)
  })

  it('counts the steps an edit runs, its strength\'s share of those asked, in its progress', async () => {
    const body = new FormData()
    for (const [name, value] of Object.entries({model: 'tiny-random-image', prompt: 'progress', seed: '1', steps: '4', stream: 'true'})) body.append(name, value)
    body.append('image', new Blob([PNG.sync.write(new PNG({height: 32, width: 32}))]), 'image.png')
    const streamed = await fetch(`${service.url}/v1/images/edits`, {body, method: 'POST'})
    const events = (await streamed.text()).split('\n\n').filter(Boolean).map((block) => JSON.parse(/^data: (.*)$/m.exec(block)![1]))
    // int(4 × 0.8) = 3 steps run.
    expect(events.map((event) => (event.step ? `${event.step}/${event.steps}` : event.type))).to.deep.equal(['1/3', '2/3', '3/3', 'image_edit.completed'])
  })

  it('makes an MP4 video from text', async () => {
    const {body, status} = await api('POST', '/v1/video/generations', {model: 'tiny-random-video', num_frames: 5, prompt: 'waves', response_format: 'b64_json', seed: 0, size: '32x32', steps: 2})
    expect(status, JSON.stringify(body)).to.equal(200)
    const video = Buffer.from(body.data[0].b64_json, 'base64')
    // An MP4 file starts with its `ftyp` box.
    expect(video.subarray(4, 8).toString('latin1')).to.equal('ftyp')
  })

  it('refuses a size the pipeline cannot make with a 400 naming the field it came from, and keeps serving', async () => {
    // Wan makes sides in multiples of 16: 40 passes the service's own check (multiples of 8) and is the pipeline's to refuse.
    const video = {model: 'tiny-random-video', num_frames: 5, prompt: 'waves', steps: 1}
    const sized = await api('POST', '/v1/video/generations', {...video, size: '40x40'})
    expect([sized.status, sized.body.error?.param], JSON.stringify(sized.body)).to.deep.equal([400, 'size'])
    expect(sized.body.error.message).to.contain('multiples of 16 pixels (asked 40x40); try 32x32 or 48x48 as `size`')
    const kwargs = await api('POST', '/v1/video/generations', {...video, kwargs: {height: 32, width: 40}, size: '32x32'})
    expect([kwargs.status, kwargs.body.error?.param], JSON.stringify(kwargs.body)).to.deep.equal([400, 'kwargs'])
    expect(kwargs.body.error.message).to.contain('as the width and height in `kwargs`')
    expect((await api('POST', '/v1/video/generations', {...video, response_format: 'b64_json', size: '32x32'})).status).to.equal(200)
  })

  it('refuses a frame count the pipeline would change with a 400 naming the field and the nearest counts it makes', async () => {
    // Wan makes 4·n+1 frames: it would make 5 of 4 and 1 of 2.
    const video = {model: 'tiny-random-video', prompt: 'waves', size: '32x32', steps: 1}
    const four = await api('POST', '/v1/video/generations', {...video, num_frames: 4})
    expect([four.status, four.body.error?.param], JSON.stringify(four.body)).to.deep.equal([400, 'num_frames'])
    expect(four.body.error.message).to.contain('this model makes videos of 4·n+1 frames (asked 4); try 1 or 5 as `num_frames`')
    const kwargs = await api('POST', '/v1/video/generations', {...video, kwargs: {num_frames: 6}, num_frames: 5})
    expect([kwargs.status, kwargs.body.error?.param], JSON.stringify(kwargs.body)).to.deep.equal([400, 'kwargs'])
    expect(kwargs.body.error.message).to.contain('try 5 or 9 as `num_frames` in `kwargs`')
    expect((await api('POST', '/v1/video/generations', {...video, num_frames: 1, response_format: 'b64_json'})).status).to.equal(200)
  })

  it('refuses at launch a model that needs more GPU memory than the machine has, saying what it needs', async function () {
    const folder = join(await temporaryDirectory(), 'pipeline')
    await mkdir(folder)
    await writeFile(join(folder, 'model_index.json'), '{}\n')
    const family = {min_gpu_memory_gb: 4096, model_ability: ['text2video'], model_family: 'Wan', model_name: 'too-big-video', model_uri: folder}
    expect((await api('POST', '/v1/model_registrations/video', {model: family, persist: false})).status).to.equal(200)
    const launched = await api('POST', '/v1/models', {model_name: 'too-big-video', model_type: 'video'})
    expect(launched.status).to.equal(400)
    expect(launched.body.error.message).to.match(/^too-big-video needs a GPU with 4096 GB of memory \(min_gpu_memory_gb\); (worker \S+ has no CUDA GPU|the largest GPU of worker)/)
    await rm(folder, {force: true, recursive: true})
  })
})
