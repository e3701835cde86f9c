/**
 * The image model type's routes on a real `service-local`, with the engine-image-pattern fixture (linked as a user
 * plugin) drawing pictures from what it is given: generations through the official openai client (checked against
 * the OpenAI API description), url answers the service serves, streamed progress, a disconnect that stops the
 * generation, uploads (edits, variations, inpainting, OCR), bad input refused naming the field, uploads removed
 * after every request, and the client library and servicectl.
 */
import {expect} from 'chai'
import {readdir, readFile, rm, writeFile} from 'node:fs/promises'
import {join} from 'node:path'
import OpenAI, {toFile} from 'openai'
import {PNG} from 'pngjs'
import {createHash} from 'node:crypto'

import {Client} from '../../src/client/index.js'
import {assertOpenAiSchema} from '../helpers/conformance.js'
import {type OpenApiDocument, OpenApiChecker} from '../helpers/openapi-checker.js'
import {formData, postForm, serviceWithPatternEngine, solidPng} from '../helpers/media.js'
import {callApi, type RunningService, servicectl, temporaryDirectory, until} from '../helpers/service.js'
const MODEL = 'pattern-image'

/** The fixture's colour for a prompt, seed and image index. */
const colourOf = (text: string) => [...createHash('sha256').update(text).digest().subarray(0, 3)]

const pixel = (png: PNG, x: number, y: number) => [...png.data.subarray((y * png.width + x) * 4, (y * png.width + x) * 4 + 3)]
const decode = (base64: string) => PNG.sync.read(Buffer.from(base64, 'base64'))

describe('image models (service-local, engine-image-pattern, openai client)', function () {
  let home: string
  let uploads: string
  let service: RunningService
  let openai: OpenAI
  const api = (method: string, path: string, body?: unknown) => callApi(service, method, path, body)
  const form = (path: string, fields: Record<string, string>, files: Record<string, Buffer>) => postForm(service, path, fields, files)

  before(async () => {
    uploads = await temporaryDirectory('service-uploads-')
    // Uploads are written to the temporary folder, which this test watches.
    ;({home, service} = await serviceWithPatternEngine('image', MODEL, ['text2image', 'image2image', 'inpainting', 'ocr'], {TMPDIR: uploads}))
    openai = new OpenAI({apiKey: 'unused', baseURL: `${service.url}/v1`, maxRetries: 0})
    for (const [uid, parameters] of [[MODEL, {}], ['slow-image', {step_delay_ms: 20}]] as const) {
      const launched = await api('POST', '/v1/models', {model_name: MODEL, model_type: 'image', model_uid: uid, ...parameters})
      expect(launched.status, JSON.stringify(launched.body)).to.equal(200)
    }
  })

  after(async () => {
    await service?.stop()
    await rm(home, {force: true, recursive: true})
    await rm(uploads, {force: true, recursive: true})
  })

  it('lists the built-in catalogue: tiny-random-image, SD 1.5, SDXL, SD 3.5, FLUX.1 with their GGUF files, OCR', async () => {
    const {body} = await api('GET', '/v1/model_registrations/image')
    const names = body.map((entry: {model_name: string}) => entry.model_name)
    expect(names).to.include.members(['tiny-random-image', 'stable-diffusion-v1.5', 'stable-diffusion-xl-base-1.0', 'sd3.5-medium', 'sd3.5-large', 'FLUX.1-schnell', 'FLUX.1-dev', 'GOT-OCR2_0'])
    const flux = (await api('GET', '/v1/model_registrations/image/FLUX.1-schnell')).body
    expect(flux.model_ability).to.deep.equal(['text2image', 'image2image', 'inpainting'])
    expect(flux.model_src.huggingface).to.deep.include({gguf_model_file_name_template: 'flux1-schnell-{quantization}.gguf', gguf_model_id: 'city96/FLUX.1-schnell-gguf', model_id: 'black-forest-labs/FLUX.1-schnell'})
    expect(flux.model_specs.map((spec: {model_format: string}) => spec.model_format)).to.deep.equal(['diffusers', 'ggufv2'])
  })

  it('makes n images from a prompt with the openai client, reproducibly with a seed', async () => {
    const raw = await api('POST', '/v1/images/generations', {model: MODEL, n: 2, prompt: 'a red barn', response_format: 'b64_json', seed: 7, size: '32x48'})
    expect(raw.status, JSON.stringify(raw.body)).to.equal(200)
    assertOpenAiSchema('ImagesResponse', raw.body)
    const reply = await openai.images.generate({model: MODEL, n: 2, prompt: 'a red barn', response_format: 'b64_json', size: '32x48' as '256x256', ...({seed: 7} as object)})
    expect(reply.data!.map((image) => image.b64_json)).to.deep.equal(raw.body.data.map((image: {b64_json: string}) => image.b64_json))
    for (const [index, image] of reply.data!.entries()) {
      const png = decode(image.b64_json!)
      expect([png.width, png.height]).to.deep.equal([32, 48])
      expect(pixel(png, 5, 5)).to.deep.equal(colourOf(`a red barn|7|${index}`))
    }
  })

  it('answers url with an address the service serves the PNG at', async () => {
    const {body, status} = await api('POST', '/v1/images/generations', {model: MODEL, prompt: 'a lighthouse', response_format: 'url', seed: 3, size: '16x16'})
    expect(status).to.equal(200)
    const url: string = body.data[0].url
    expect(url.startsWith(`${service.url}/v1/images/files/`)).to.equal(true)
    const response = await fetch(url)
    expect(response.headers.get('content-type')).to.equal('image/png')
    expect(pixel(PNG.sync.read(Buffer.from(await response.arrayBuffer())), 0, 0)).to.deep.equal(colourOf('a lighthouse|3|0'))
    expect((await fetch(`${service.url}/v1/images/files/not-there.png`)).status).to.equal(404)
  })

  it('streams each step done, then the images, as server-sent events', async () => {
    const response = await fetch(`${service.url}/v1/images/generations`, {
      body: JSON.stringify({model: MODEL, n: 1, prompt: 'steps', seed: 1, size: '16x16', steps: 3, stream: true}),
      headers: {'content-type': 'application/json'},
      method: 'POST',
    })
    const events = (await response.text()).split('\n\n').filter(Boolean).map((block) => JSON.parse(/^data: (.*)$/m.exec(block)![1]))
    expect(events.map((event) => event.type)).to.deep.equal(['image_generation.progress', 'image_generation.progress', 'image_generation.progress', 'image_generation.completed'])
    expect(events.slice(0, 3).map((event) => [event.step, event.steps])).to.deep.equal([[1, 3], [2, 3], [3, 3]])
    expect(decode(events[3].b64_json).width).to.equal(16)
    assertOpenAiSchema('ImageGenCompletedEvent', events[3])
    expect(events[3]).to.include({background: 'auto', quality: 'auto', size: 'auto'})
    expect(events[3].usage).to.deep.equal({input_tokens: 0, input_tokens_details: {image_tokens: 0, text_tokens: 0}, output_tokens: 0, total_tokens: 0})
  })

  it('sends the completed events OpenAI describes, with b64_json also for url answers (openai client)', async () => {
    const generated = await openai.images.generate({background: 'opaque', model: MODEL, prompt: 'x', quality: 'high', response_format: 'url', size: '16x16' as never, stream: true})
    const completed = []
    for await (const event of generated) if (event.type === 'image_generation.completed') completed.push(event)
    expect(completed).to.have.length(1)
    assertOpenAiSchema('ImageGenCompletedEvent', completed[0])
    expect(completed[0]).to.include({background: 'opaque', quality: 'high'})
    expect(decode(completed[0].b64_json).width).to.equal(16)
    expect((completed[0] as unknown as {url: string}).url).to.match(/\/v1\/images\/files\//)

    const picture = await toFile(solidPng(16, 16, [1, 2, 3, 255]), 'picture.png', {type: 'image/png'})
    const edits = await openai.images.edit({image: picture, model: MODEL, prompt: 'x', stream: true})
    const types = []
    for await (const event of edits) {
      types.push(event.type)
      if (event.type === 'image_edit.completed') assertOpenAiSchema('ImageEditCompletedEvent', event)
    }
    expect(types.at(-1)).to.equal('image_edit.completed')
  })

  it('answers a streamed request the engine refuses with the HTTP error, as without stream', async () => {
    const refused = await openai.images.generate({model: MODEL, prompt: 'x', size: '24x24' as never, stream: true}).catch((error: unknown) => error)
    expect(refused).to.be.instanceOf(OpenAI.BadRequestError)
    expect((refused as InstanceType<typeof OpenAI.BadRequestError>).param).to.equal('size')
    expect((refused as InstanceType<typeof OpenAI.BadRequestError>).message).to.match(/multiple of 16/)
  })

  it('takes OpenAI\'s background, moderation, output_compression, partial_images and input_fidelity at values it can honour', async () => {
    const made = await openai.images.generate({background: 'opaque', model: MODEL, moderation: 'low', output_compression: 80, partial_images: 0, prompt: 'x', size: '16x16' as never})
    expect(decode(made.data![0].b64_json!).width).to.equal(16)
    const picture = await toFile(solidPng(16, 16, [1, 2, 3, 255]), 'picture.png', {type: 'image/png'})
    const edited = await openai.images.edit({background: 'auto', image: picture, input_fidelity: 'high', model: MODEL, output_compression: 50, partial_images: 0, prompt: 'x'})
    expect(edited.data).to.have.length(1)
    const refusals: Array<[Promise<{status: number; body: any}>, string]> = [
      [api('POST', '/v1/images/generations', {background: 'transparent', model: MODEL, prompt: 'x'}), 'background'],
      [api('POST', '/v1/images/generations', {model: MODEL, partial_images: 2, prompt: 'x', stream: true}), 'partial_images'],
      [form('/v1/images/edits', {background: 'transparent', model: MODEL, prompt: 'x'}, {image: solidPng(16, 16, [1, 2, 3, 255])}), 'background'],
    ]
    for (const [reply, param] of refusals) {
      const {body, status} = await reply
      expect([status, body.error.param], JSON.stringify(body)).to.deep.equal([400, param])
      expect(body.error.message).to.match(/is not supported/)
    }
  })

  it('stops a generation when its client goes away', async () => {
    const controller = new AbortController()
    const response = await fetch(`${service.url}/v1/images/generations`, {
      body: JSON.stringify({model: 'slow-image', prompt: 'forever', size: '16x16', steps: 1000, stream: true}),
      headers: {'content-type': 'application/json'},
      method: 'POST',
      signal: controller.signal,
    })
    const reader = response.body!.getReader()
    expect(new TextDecoder().decode((await reader.read()).value)).to.contain('"step":1')
    controller.abort()
    const log = join(home, 'logs', 'models', 'slow-image.log')
    const line = await until(async () => /generation stopped at step (\d+) of 1000/.exec(await readFile(log, 'utf8').catch(() => ''))?.[1], 'the generation to stop')
    expect(Number(line)).to.be.below(1000)
  })

  it('edits, varies and repaints uploaded pictures (openai client and Xinference\'s inpainting)', async () => {
    const picture = solidPng(16, 16, [10, 20, 30, 255])
    const edited = await openai.images.edit({image: await toFile(picture, 'picture.png', {type: 'image/png'}), model: MODEL, prompt: 'invert it'})
    expect(pixel(decode(edited.data![0].b64_json!), 3, 3)).to.deep.equal([245, 235, 225])
    const varied = await openai.images.createVariation({image: await toFile(picture, 'picture.png', {type: 'image/png'}), model: MODEL, n: 2})
    expect(varied.data).to.have.length(2)
    // Without a size, the picture's own in whole blocks of 8 pixels.
    const odd = await openai.images.edit({image: await toFile(solidPng(35, 33, [10, 20, 30, 255]), 'odd.png', {type: 'image/png'}), model: MODEL, prompt: 'invert it'})
    const made = decode(odd.data![0].b64_json!)
    expect([made.width, made.height]).to.deep.equal([32, 32])

    const mask = new PNG({height: 16, width: 16})
    for (let index = 0; index < 16 * 16; index++) mask.data.set(index % 16 < 8 ? [255, 255, 255, 255] : [0, 0, 0, 255], index * 4)
    const {body, status} = await form('/v1/images/inpainting', {model: MODEL, prompt: 'paint', seed: '5'}, {image: picture, mask_image: PNG.sync.write(mask)})
    expect(status, JSON.stringify(body)).to.equal(200)
    const painted = decode(body.data[0].b64_json)
    expect(pixel(painted, 2, 2)).to.deep.equal(colourOf('paint|5|0'))
    expect(pixel(painted, 12, 2)).to.deep.equal([10, 20, 30])
  })

  it('reads a picture with an OCR model', async () => {
    const {body, status} = await form('/v1/images/ocr', {model: MODEL}, {image: solidPng(24, 8, [0, 0, 0, 255])})
    expect([status, body]).to.deep.equal([200, {text: 'image/png 24x8'}])
  })

  it('refuses what a model cannot use, naming the field, and removes every upload', async () => {
    const picture = solidPng(16, 16, [1, 2, 3, 255])
    const cases: Array<[Promise<{status: number; body: any}>, string, RegExp]> = [
      [api('POST', '/v1/images/generations', {model: MODEL, prompt: 'x', size: '33x33'}), 'size', /each side must be a multiple of 8 from 8 to 4096 pixels, such as 32/],
      [api('POST', '/v1/images/generations', {model: MODEL, prompt: 'x', size: '24x24'}), 'size', /cannot be made by pattern-image: each side must be a multiple of 16/],
      [api('POST', '/v1/images/generations', {model: MODEL, prompt: 'x', size: 'large'}), 'size', /must be WIDTHxHEIGHT/],
      [api('POST', '/v1/images/generations', {model: MODEL, n: 11, prompt: 'x'}), 'n', /between 1 and 10/],
      [api('POST', '/v1/images/generations', {kwargs: '{oops', model: MODEL, prompt: 'x'}), 'kwargs', /not valid JSON/],
      [api('POST', '/v1/images/generations', {model: MODEL, prompt: ''}), 'prompt', /prompt/],
      [form('/v1/images/edits', {model: MODEL, prompt: 'x'}, {image: Buffer.from('not a picture at all')}), 'image', /is not an image this service reads/],
      [form('/v1/images/edits', {model: MODEL, prompt: 'x'}, {image: picture, mask: solidPng(8, 8, [255, 255, 255, 255])}), 'mask', /mask` is 8x8 but the image is 16x16/],
      [form('/v1/images/inpainting', {model: MODEL, prompt: 'x'}, {image: picture, mask_image: solidPng(16, 8, [255, 255, 255, 255])}), 'mask_image', /16x8 but the image is 16x16/],
      [form('/v1/images/inpainting', {model: MODEL, prompt: 'x'}, {image: picture}), 'mask_image', /mask_image` is required/],
      [form('/v1/images/edits', {model: MODEL, n: 'two', prompt: 'x'}, {image: picture}), 'n', /must be an integer/],
      [form('/v1/images/edits', {model: MODEL, prompt: 'x'}, {}), 'image', /image` is required/],
    ]
    for (const [reply, param, message] of cases) {
      const {body, status} = await reply
      expect(status, JSON.stringify(body)).to.equal(400)
      expect(body.error.param, JSON.stringify(body)).to.equal(param)
      expect(body.error.message).to.match(message)
    }

    const pictures = await Promise.all(['a.png', 'b.png'].map((name) => toFile(picture, name, {type: 'image/png'})))
    const several = await openai.images.edit({image: pictures, model: MODEL, prompt: 'x'}).catch((error: unknown) => error)
    expect(several).to.be.instanceOf(OpenAI.BadRequestError)
    expect((several as InstanceType<typeof OpenAI.BadRequestError>).param).to.equal('image[]')
    const bounded = await api('POST', '/v1/images/generations', {kwargs: {num_images_per_prompt: 500}, model: MODEL, prompt: 'x'})
    expect([bounded.status, bounded.body.error?.param]).to.deep.equal([400, 'kwargs'])

    // Node keeps its compile cache in a folder there; uploads are files.
    const uploaded = async () => (await readdir(uploads, {withFileTypes: true})).filter((entry) => entry.isFile())
    await until(async () => ((await uploaded()).length === 0 ? true : undefined), 'every upload to be removed')
    expect((await api('POST', '/v1/images/generations', {model: MODEL, prompt: 'still serving', size: '16x16'})).status).to.equal(200)
  })

  it('generates, edits and reads through the client library and servicectl', async () => {
    const model = new Client(service.url).model(MODEL)
    const made = await model.textToImage('client', {seed: 2, size: '16x32'})
    expect(pixel(decode(made.data[0].b64_json!), 0, 0)).to.deep.equal(colourOf('client|2|0'))
    const picture = new Blob([solidPng(16, 16, [0, 100, 200, 255])])
    expect(pixel(decode((await model.imageToImage(picture, 'invert')).data[0].b64_json!), 0, 0)).to.deep.equal([255, 155, 55])
    expect(await model.ocr(picture)).to.deep.equal({text: 'image/png 16x16'})

    const directory = await temporaryDirectory()
    const cli = await servicectl(['image', '-e', service.url, '-u', MODEL, '--prompt', 'cli', '--seed', '4', '--size', '16x16', '-n', '2', '-o', join(directory, 'made')])
    expect(cli.exitCode, cli.stderr).to.equal(0)
    expect(cli.stdout).to.contain(`Wrote ${join(directory, 'made-2.png')}`)
    expect(pixel(PNG.sync.read(await readFile(join(directory, 'made-1.png'))), 0, 0)).to.deep.equal(colourOf('cli|4|0'))
    const malformed = await servicectl(['image', '-e', service.url, '-u', MODEL, '--prompt', 'cli', '--guidance-scale', 'abc'])
    expect([malformed.exitCode, malformed.stderr]).to.satisfy(([code, stderr]: [number, string]) => code === 2 && stderr.includes('guidance-scale'))
    const nowhere = await servicectl(['image', '-e', service.url, '-u', MODEL, '--prompt', 'cli', '-o', join(directory, 'missing', 'made')])
    expect([nowhere.exitCode, nowhere.stderr]).to.satisfy(([code, stderr]: [number, string]) => code === 2 && stderr.replaceAll(/\s+(›\s+)?/g, ' ').includes(`the folder ${join(directory, 'missing')} does not exist`))
    await writeFile(join(directory, 'in.png'), solidPng(16, 16, [0, 0, 0, 255]))
    const ocr = await servicectl(['ocr', '-e', service.url, '-u', MODEL, '--image', join(directory, 'in.png')])
    expect(ocr.stdout.trim()).to.equal('image/png 16x16')
    await rm(directory, {force: true, recursive: true})
  })

  it('answers every image route as /openapi.json declares it', async () => {
    const checker = new OpenApiChecker((await api('GET', '/openapi.json')).body as OpenApiDocument)
    const upload = (fields: Record<string, string>, files: Record<string, Buffer>) => ({form: formData(fields, files)})
    const picture = solidPng(16, 16, [10, 20, 30, 255])
    const {body} = await checker.call(service, 'POST', '/v1/images/generations', {body: {model: MODEL, prompt: 'documented', response_format: 'url', size: '16x16'}})
    await checker.call(service, 'GET', '/v1/images/files/{id}', {params: {id: new URL(body.data[0].url).pathname.split('/').pop()!}})
    await checker.call(service, 'POST', '/v1/images/edits', upload({model: MODEL, prompt: 'invert it'}, {image: picture}))
    await checker.call(service, 'POST', '/v1/images/variations', upload({model: MODEL}, {image: picture}))
    await checker.call(service, 'POST', '/v1/images/inpainting', upload({model: MODEL, prompt: 'paint'}, {image: picture, mask_image: solidPng(16, 16, [255, 255, 255, 255])}))
    await checker.call(service, 'POST', '/v1/images/ocr', upload({model: MODEL}, {image: picture}))
    const routes = checker.operations().filter((key) => checker.operation(key)['x-plugin'] === '@service-toolkit/plugin-model-image')
    expect(routes.filter((key) => !checker.answered.get(key)?.has(200)), 'routes not answered 200').to.deep.equal([])
  })
})
