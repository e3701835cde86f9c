/**
 * The video model type's routes on a real `service-local`, with the engine-image-pattern fixture making film strips
 * (the frames of a video, one above the other, in a PNG) from what it is given: Xinference's three routes, url and
 * b64_json answers, the built-in catalogue, and bad input refused naming the field.
 */
import {expect} from 'chai'
import {readFile, rm} from 'node:fs/promises'
import {join} from 'node:path'
import {PNG} from 'pngjs'

import {Client} from '../../src/client/index.js'
import {type OpenApiDocument, OpenApiChecker} from '../helpers/openapi-checker.js'
import {formData, postForm, serviceWithPatternEngine, solidPng} from '../helpers/media.js'
import {callApi, type RunningService, servicectl, temporaryDirectory} from '../helpers/service.js'
const MODEL = 'pattern-video'

/** The first pixel of each frame of a film strip. */
function frames(strip: Buffer, width: number, height: number): number[][] {
  const png = PNG.sync.read(strip)
  expect(png.width).to.equal(width)
  return Array.from({length: png.height / height}, (_, frame) => [...png.data.subarray(frame * width * height * 4, frame * width * height * 4 + 3)])
}

describe('video models (service-local, engine-image-pattern)', function () {
  let home: string
  let service: RunningService
  const api = (method: string, path: string, body?: unknown) => callApi(service, method, path, body)
  const form = (path: string, fields: Record<string, string>, files: Record<string, Buffer>) => postForm(service, path, fields, files)

  before(async () => {
    ;({home, service} = await serviceWithPatternEngine('video', MODEL, ['text2video', 'image2video', 'firstlastframe2video']))
    const launched = await api('POST', '/v1/models', {model_name: MODEL, model_type: 'video'})
    expect(launched.status, JSON.stringify(launched.body)).to.equal(200)
  })

  after(async () => {
    await service?.stop()
    await rm(home, {force: true, recursive: true})
  })

  it('lists the built-in catalogue: tiny-random-video, CogVideoX and Wan 2.1/2.2 with the GPU memory they need', async () => {
    const {body} = await api('GET', '/v1/model_registrations/video')
    expect(body.map((entry: {model_name: string}) => entry.model_name)).to.include.members(['tiny-random-video', 'CogVideoX-2b', 'CogVideoX-5b', 'Wan2.1-1.3B', 'Wan2.1-i2v-14B-480p', 'Wan2.1-flf2v-14B-720p', 'Wan2.2-ti2v-5B'])
    const wan = (await api('GET', '/v1/model_registrations/video/Wan2.1-flf2v-14B-720p')).body
    expect(wan).to.deep.include({min_gpu_memory_gb: 48, model_ability: ['firstlastframe2video']})
    expect(wan.model_src.huggingface.model_id).to.equal('Wan-AI/Wan2.1-FLF2V-14B-720P-diffusers')
  })

  it('makes videos from text, answering a url (Xinference\'s default) the service serves, or b64_json', async () => {
    const {body, status} = await api('POST', '/v1/video/generations', {model: MODEL, num_frames: 3, prompt: 'waves', seed: 1, size: '16x8'})
    expect(status, JSON.stringify(body)).to.equal(200)
    expect(body.data).to.have.length(1)
    const response = await fetch(body.data[0].url)
    expect(response.headers.get('content-type')).to.equal('image/png')
    const strip = frames(Buffer.from(await response.arrayBuffer()), 16, 8)
    expect(strip).to.have.length(3)
    expect(strip[2]).to.deep.equal([0, 0, 0])
    const inline = await api('POST', '/v1/video/generations', {model: MODEL, n: 2, num_frames: 2, prompt: 'waves', response_format: 'b64_json', seed: 1, size: '16x8'})
    expect(inline.body.data).to.have.length(2)
    expect(frames(Buffer.from(inline.body.data[0].b64_json, 'base64'), 16, 8)[0]).to.deep.equal(strip[0])
  })

  it('animates a picture, and goes from a first frame to a last one', async () => {
    const animated = await form('/v1/video/generations/image', {model: MODEL, num_frames: '2', response_format: 'b64_json'}, {image: solidPng(8, 8, [200, 100, 50])})
    expect(animated.status, JSON.stringify(animated.body)).to.equal(200)
    expect(frames(Buffer.from(animated.body.data[0].b64_json, 'base64'), 8, 8)).to.deep.equal([[200, 100, 50], [0, 0, 0]])
    const between = await form('/v1/video/generations/flf', {model: MODEL, num_frames: '3', response_format: 'b64_json'}, {first_frame: solidPng(8, 8, [0, 0, 0]), last_frame: solidPng(8, 8, [100, 200, 250])})
    expect(frames(Buffer.from(between.body.data[0].b64_json, 'base64'), 8, 8)).to.deep.equal([[0, 0, 0], [50, 100, 125], [100, 200, 250]])
  })

  it('refuses what a model cannot use, naming the field', async () => {
    const cases: Array<[Promise<{status: number; body: any}>, string, RegExp]> = [
      [api('POST', '/v1/video/generations', {model: MODEL, prompt: 'x', size: '10x10'}), 'size', /multiple of 8/],
      [api('POST', '/v1/video/generations', {model: MODEL, num_frames: 0, prompt: 'x'}), 'num_frames', /between 1 and 1024/],
      [api('POST', '/v1/video/generations', {model: MODEL}), 'prompt', /prompt/],
      [form('/v1/video/generations/image', {model: MODEL}, {image: Buffer.from('plain text, not a picture')}), 'image', /is not an image this service reads/],
      [form('/v1/video/generations/flf', {model: MODEL}, {first_frame: solidPng(8, 8, [0, 0, 0]), last_frame: solidPng(16, 8, [0, 0, 0])}), 'last_frame', /16x8 but first_frame is 8x8/],
      [form('/v1/video/generations/flf', {model: MODEL}, {first_frame: solidPng(8, 8, [0, 0, 0])}), 'last_frame', /last_frame` is required/],
      [form('/v1/video/generations/image', {kwargs: '[1]', model: MODEL}, {image: solidPng(8, 8, [0, 0, 0])}), 'kwargs', /must be a JSON object/],
    ]
    for (const [reply, param, message] of cases) {
      const {body, status} = await reply
      expect(status, JSON.stringify(body)).to.equal(400)
      expect(body.error.param, JSON.stringify(body)).to.equal(param)
      expect(body.error.message).to.match(message)
    }
  })

  it('makes videos through the client library and servicectl video', async () => {
    const model = new Client(service.url).model(MODEL)
    const made = await model.textToVideo('client', {num_frames: 2, seed: 3, size: '8x8'})
    const animated = await model.imageToVideo(new Blob([solidPng(8, 8, [9, 9, 9])]), '', {num_frames: 1})
    expect(frames(Buffer.from(animated.data[0].b64_json!, 'base64'), 8, 8)).to.deep.equal([[9, 9, 9]])
    const between = await model.flfToVideo(new Blob([solidPng(8, 8, [0, 0, 0])]), new Blob([solidPng(8, 8, [2, 4, 6])]), '', {num_frames: 2})
    expect(frames(Buffer.from(between.data[0].b64_json!, 'base64'), 8, 8)).to.deep.equal([[0, 0, 0], [2, 4, 6]])

    const directory = await temporaryDirectory()
    const cli = await servicectl(['video', '-e', service.url, '-u', MODEL, '--prompt', 'client', '--seed', '3', '--num-frames', '2', '--size', '8x8', '-o', join(directory, 'clip')])
    expect(cli.exitCode, cli.stderr).to.equal(0)
    expect(cli.stdout).to.contain(`Wrote ${join(directory, 'clip-1.mp4')}`)
    expect((await readFile(join(directory, 'clip-1.mp4'))).toString('base64')).to.equal(made.data[0].b64_json)
    await rm(directory, {force: true, recursive: true})
  })

  it('answers every video route as /openapi.json declares it', async () => {
    const checker = new OpenApiChecker((await api('GET', '/openapi.json')).body as OpenApiDocument)
    const upload = (fields: Record<string, string>, files: Record<string, Buffer>) => ({form: formData(fields, files)})
    const {body} = await checker.call(service, 'POST', '/v1/video/generations', {body: {model: MODEL, num_frames: 2, prompt: 'documented', size: '16x8'}})
    await checker.call(service, 'GET', '/v1/video/files/{id}', {params: {id: new URL(body.data[0].url).pathname.split('/').pop()!}})
    await checker.call(service, 'POST', '/v1/video/generations/image', upload({model: MODEL, num_frames: '2'}, {image: solidPng(8, 8, [200, 100, 50])}))
    await checker.call(service, 'POST', '/v1/video/generations/flf', upload({model: MODEL, num_frames: '2'}, {first_frame: solidPng(8, 8, [0, 0, 0]), last_frame: solidPng(8, 8, [100, 200, 250])}))
    const routes = checker.operations().filter((key) => checker.operation(key)['x-plugin'] === '@service-toolkit/plugin-model-video')
    expect(routes.filter((key) => !checker.answered.get(key)?.has(200)), 'routes not answered 200').to.deep.equal([])
  })
})
