/**
 * OCR on the Transformers engine end to end on this CPU machine: `servicectl launch -n tiny-random-ocr -t image
 * --model-engine transformers` has transformers build a tiny GOT-OCR 2.0 (random weights, its processor and
 * tokenizer) as safetensors, serves it from python/host.py, and a picture sent as multipart, through the client library
 * and through `servicectl ocr` reads as the text the same model writes when run directly with transformers in the
 * same environment. Bad pictures and kwargs are refused naming them, a client that leaves stops the reading, the
 * catalogue's GOT-OCR-2.0-hf downloads from a local hub (serving the tiny model's files under its name) and reads, and
 * its remote-code GOT-OCR2_0 is refused before any download, naming what runs it. The environment is the
 * one test/e2e/transformers-engine.test.ts uses, cached outside the repository.
 */
import {expect} from 'chai'
import {execa} from 'execa'
import {readFile, rm, writeFile} from 'node:fs/promises'
import {dirname, join} from 'node:path'
import {pathToFileURL} from 'node:url'

import {Client} from '../../src/client/index.js'
import {FakeHub} from '../helpers/fake-hub.js'
import {postForm, solidPng} from '../helpers/media.js'
import {TEST_CACHE, uvFromPyPI} from '../helpers/python-tools.js'
import {callApi, type RunningService, servicectl, startService, temporaryDirectory, until} from '../helpers/service.js'

const MODEL = 'tiny-random-ocr'
const MAX_NEW_TOKENS = 24

/** Reads the picture with each processor setting as GOT-OCR's model card does: greedy, to the end of the turn. */
const DIRECT = `
import json, sys
from PIL import Image
from transformers import AutoModelForImageTextToText, AutoProcessor
folder, picture, settings, limit = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), int(sys.argv[4])
processor = AutoProcessor.from_pretrained(folder)
model = AutoModelForImageTextToText.from_pretrained(folder)
image = Image.open(picture)
texts = []
for each in settings:
    inputs = processor(image, return_tensors="pt", **each)
    out = model.generate(**inputs, do_sample=False, max_new_tokens=limit, eos_token_id=processor.tokenizer.convert_tokens_to_ids("<|im_end|>"))
    texts.append(processor.decode(out[0, inputs["input_ids"].shape[1]:], skip_special_tokens=True))
print(json.dumps(texts))
`

describe('OCR on the transformers engine (service-local, tiny-random-ocr as safetensors)', function () {
  let service: RunningService
  let hub: FakeHub
  let directory: string
  const picture = solidPng(48, 32, [20, 40, 200])
  const modelLog = () => readFile(join(service.home, 'logs', 'models', `${MODEL}.log`), 'utf8').catch(() => '')
  /** The interpreter of the engine's environment and the model's folder, from the running program's command line. */
  const program = async () => {
    const {pid} = (await callApi(service, 'GET', `/v1/models/${MODEL}`)).body
    const args = (await readFile(`/proc/${pid}/cmdline`, 'utf8')).split('\0')
    return {folder: dirname(args[args.indexOf('--model') + 1]), python: args[0]}
  }

  const read = (kwargs: Record<string, unknown>, image: Buffer = picture) => postForm(service, '/v1/images/ocr', {kwargs: JSON.stringify(kwargs), model: MODEL}, {image})

  before(async function () {
    this.timeout(120_000)
    const uv = await uvFromPyPI()
    hub = await FakeHub.start()
    directory = await temporaryDirectory()
    service = await startService({env: {HF_ENDPOINT: hub.url, PATH: `${uv}:${process.env.PATH}`, SERVICE_VIRTUALENV_DIR: join(TEST_CACHE, 'virtualenv')}})
  })

  after(async () => {
    await service?.stop()
    await hub?.stop()
    if (directory) await rm(directory, {force: true, recursive: true})
  })

  it('launches tiny-random-ocr as an image model with no download, through servicectl', async function () {
    // A cold first run installs torch, transformers and pillow into the test cache (docs/getting-started.md, Run the tests, gives the time it takes).
    this.timeout(900_000)
    const launched = await servicectl(['launch', '-n', MODEL, '-t', 'image', '--model-engine', 'transformers', '-e', service.url])
    expect(launched.exitCode, launched.stderr).to.equal(0)
    expect(await modelLog()).to.match(/loaded \S+tiny-random-ocr--0_0001B--pytorch--none \(image\) on cpu with transformers 5\.\d+\.\d+, torch 2\.13\.0\+cpu/)
    const model = (await callApi(service, 'GET', `/v1/models/${MODEL}`)).body
    expect(model).to.deep.include({model_engine: 'transformers', model_format: 'pytorch', model_type: 'image'})
    expect(model.model_ability).to.deep.equal(['ocr'])
  })

  it('reads a picture as the model itself does, plain and formatted, by multipart, the client library and servicectl', async function () {
    this.timeout(120_000)
    const plain = await read({max_new_tokens: MAX_NEW_TOKENS})
    const formatted = await read({format: true, max_new_tokens: MAX_NEW_TOKENS})
    // A large picture cut into tiles (here 256-pixel ones, the tiny model's), read together.
    const tiled = await read({crop_to_patches: true, max_new_tokens: MAX_NEW_TOKENS, max_patches: 3})
    for (const reply of [plain, formatted, tiled]) expect(reply.status, JSON.stringify(reply.body)).to.equal(200)
    // Xinference's name for the formatted reading.
    expect((await read({max_new_tokens: MAX_NEW_TOKENS, ocr_type: 'format'})).body).to.deep.equal(formatted.body)

    // The same model files, run directly with transformers in the engine's environment.
    const {folder, python} = await program()
    const file = join(directory, 'in.png')
    await writeFile(file, picture)
    const direct = await execa(python, ['-c', DIRECT, folder, file, JSON.stringify([{}, {format: true}, {crop_to_patches: true, max_patches: 3}]), String(MAX_NEW_TOKENS)], {env: {HF_HUB_OFFLINE: '1'}})
    const [expectedPlain, expectedFormatted, expectedTiled] = JSON.parse(direct.stdout.trim().split('\n').pop()!) as string[]
    expect(plain.body).to.deep.equal({text: expectedPlain})
    expect(formatted.body).to.deep.equal({text: expectedFormatted})
    expect(tiled.body).to.deep.equal({text: expectedTiled})
    expect(expectedPlain, 'the random model writes something').not.to.equal('')

    const client = new Client(service.url).model(MODEL)
    expect(await client.ocr(new Blob([picture]), {max_new_tokens: MAX_NEW_TOKENS})).to.deep.equal({text: expectedPlain})
    const cli = await servicectl(['ocr', '-e', service.url, '-u', MODEL, '--image', file, '--kwargs', JSON.stringify({format: true, max_new_tokens: MAX_NEW_TOKENS})])
    expect(cli.exitCode, cli.stderr).to.equal(0)
    // servicectl prints the text and a newline, which execa takes off.
    expect(cli.stdout).to.equal(expectedFormatted)
  })

  it('refuses a picture it cannot read and kwargs it does not take, naming them, and keeps serving', async () => {
    const cases: Array<[Promise<{status: number; body: any}>, string, RegExp]> = [
      [read({}, Buffer.from('not a picture at all')), 'image', /is not an image this service reads/],
      [read({bogus: 1}), 'kwargs', /kwargs\.bogus is not an OCR setting; this engine takes format, ocr_type, box/],
      [read({max_new_tokens: 0}), 'kwargs', /kwargs\.max_new_tokens must be a whole number of at least 1/],
      [read({format: 'yes'}), 'kwargs', /kwargs\.format must be true or false/],
      [read({box: [0, 0, 64, 10]}), 'kwargs', /kwargs\.box must be a region inside the 48x32 picture/],
      [read({color: 'purple'}), 'kwargs', /kwargs\.color must be one of red, green, blue/],
    ]
    for (const [reply, param, message] of cases) {
      const {body, status} = await reply
      expect(status, JSON.stringify(body)).to.equal(400)
      expect(body.error.param, JSON.stringify(body)).to.equal(param)
      expect(body.error.message).to.match(message)
    }

    const boxed = await read({box: [0, 0, 24, 16], color: 'red', max_new_tokens: 4})
    expect(boxed.status, JSON.stringify(boxed.body)).to.equal(200)
    expect(boxed.body.text).to.be.a('string')
  })

  it('a client that leaves mid-reading stops the generation, and the model reads the next picture', async function () {
    this.timeout(120_000)
    const before = (await modelLog()).split('reading a').length
    const controller = new AbortController()
    const form = new FormData()
    form.append('model', MODEL)
    form.append('kwargs', JSON.stringify({max_new_tokens: 3000, min_new_tokens: 3000}))
    form.append('image', new Blob([picture]), 'in.png')
    const leaving = fetch(`${service.url}/v1/images/ocr`, {body: form, method: 'POST', signal: controller.signal}).catch((error: Error) => error)
    await until(async () => ((await modelLog()).split('reading a').length > before ? true : undefined), 'the program to start reading', 60_000)
    controller.abort()
    expect(await leaving).to.be.instanceOf(Error)
    const line = await until(async () => (await modelLog()).match(/client disconnected after (\d+) pieces; reading stopped/)?.[0], 'the program to see the disconnect', 60_000)
    expect(Number(line.match(/after (\d+)/)![1])).to.be.below(3000)
    const next = await read({max_new_tokens: 4})
    expect(next.status, JSON.stringify(next.body)).to.equal(200)
  })

  it("downloads the catalogue's GOT-OCR-2.0-hf through the hub as a whole safetensors repository, and reads with it", async function () {
    this.timeout(120_000)
    // The local hub serves tiny-random-ocr's files under the real repository's name: the same model, so the same text.
    const {folder} = await program()
    const names = ['config.json', 'generation_config.json', 'model.safetensors', 'processor_config.json', 'tokenizer.json', 'tokenizer_config.json']
    await hub.addRepo('stepfun-ai/GOT-OCR-2.0-hf', Object.fromEntries(names.map((name) => [name, join(folder, name)])))
    const launched = await callApi(service, 'POST', '/v1/models', {model_engine: 'transformers', model_name: 'GOT-OCR-2.0-hf', model_type: 'image'})
    expect(launched.status, JSON.stringify(launched.body)).to.equal(200)
    for (const name of names) expect(hub.fileRequests(name).length, name).to.be.above(0)
    const kwargs = JSON.stringify({max_new_tokens: MAX_NEW_TOKENS})
    const real = await postForm(service, '/v1/images/ocr', {kwargs, model: 'GOT-OCR-2.0-hf'}, {image: picture})
    expect(real.status, JSON.stringify(real.body)).to.equal(200)
    expect(real.body).to.deep.equal((await read({max_new_tokens: MAX_NEW_TOKENS})).body)
    expect((await callApi(service, 'DELETE', '/v1/models/GOT-OCR-2.0-hf')).status).to.equal(200)
  })

  it("refuses the catalogue's GOT-OCR2_0, whose repository is remote code, before downloading it, naming GOT-OCR-2.0-hf", async function () {
    this.timeout(60_000)
    const files: Record<string, string> = {}
    for (const [name, text] of Object.entries({
      'config.json': JSON.stringify({architectures: ['GOTQwenForCausalLM'], auto_map: {AutoConfig: 'modeling_GOT.GOTConfig', AutoModel: 'modeling_GOT.GOTQwenForCausalLM'}, model_type: 'GOT'}),
      'model.safetensors': 'stand-in weights',
      'modeling_GOT.py': 'class GOTQwenForCausalLM: pass\n',
    })) {
      files[name] = join(directory, name)
      await writeFile(files[name], text)
    }

    await hub.addRepo('stepfun-ai/GOT-OCR2_0', files, {commit: 'cf6b7386bc89a54f09785612ba74cb12de6fa17c'})
    const fetchedBefore = hub.fileRequests().length
    const refused = await callApi(service, 'POST', '/v1/models', {model_engine: 'transformers', model_name: 'GOT-OCR2_0', model_type: 'image'})
    expect([refused.status, refused.body.error?.param], JSON.stringify(refused.body)).to.deep.equal([400, 'model_name'])
    expect(refused.body.error.message).to.match(/^GOT-OCR2_0's weights need their repository's own Python code \(stepfun-ai\/GOT-OCR2_0\)/)
    expect(refused.body.error.message).to.match(/Xinference's runner for it, with trust_remote_code.*launch GOT-OCR-2\.0-hf \(stepfun-ai\/GOT-OCR-2\.0-hf\) instead/)
    expect(hub.fileRequests().length, 'no file downloaded').to.equal(fetchedBefore)

    // A repository of remote code the engine does not know is refused once its config.json shows it, before the program starts.
    await hub.addRepo('test-org/remote-ocr', files)
    const remote = {model_ability: ['ocr'], model_family: 'ocr', model_name: 'remote-ocr', model_src: {huggingface: {model_id: 'test-org/remote-ocr'}}}
    expect((await callApi(service, 'POST', '/v1/model_registrations/image', {model: remote, persist: false})).status).to.equal(200)
    const downloaded = await callApi(service, 'POST', '/v1/models', {model_engine: 'transformers', model_name: 'remote-ocr', model_type: 'image'})
    expect([downloaded.status, downloaded.body.error?.param], JSON.stringify(downloaded.body)).to.deep.equal([400, 'model_name'])
    expect(downloaded.body.error.message).to.match(/^remote-ocr's weights need their repository's own Python code \(config\.json's auto_map: modeling_GOT\.GOTConfig, modeling_GOT\.GOTQwenForCausalLM\).*launch a transformers-native conversion of it instead\.$/)
    expect(hub.fileRequests('config.json').length, 'downloaded through the hub').to.be.above(0)

    // An image model that does not read text belongs to the diffusers engine, even in a format this engine takes.
    const painter = {model_ability: ['text2image'], model_family: 'stable_diffusion', model_name: 'painter', model_specs: [{model_format: 'pytorch', model_uri: pathToFileURL(directory).href}]}
    expect((await callApi(service, 'POST', '/v1/model_registrations/image', {model: painter, persist: false})).status).to.equal(200)
    const wrongEngine = await callApi(service, 'POST', '/v1/models', {model_engine: 'transformers', model_name: 'painter', model_type: 'image'})
    expect(wrongEngine.status, JSON.stringify(wrongEngine.body)).to.equal(400)
    expect(wrongEngine.body.error).to.deep.include({param: 'model_engine'})
    expect(wrongEngine.body.error.message).to.equal('painter is an image model for text2image; the transformers engine runs image models that read text (ocr): launch it with the diffusers engine.')
    expect((await read({max_new_tokens: 2})).status).to.equal(200)
  })
})
