/**
 * Pictures in chat, end to end on this CPU machine: `servicectl launch -n tiny-random-vlm --model-engine transformers`
 * has transformers build a tiny LLaVA (random weights, its processor and tokenizer) as safetensors, served from
 * python/host.py; the official openai client sends a PNG as a data URL, @anthropic-ai/sdk as an image block (Ollama's API
 * takes `images`), and the replies are what the same model writes when run directly with transformers in the same environment. A picture at a
 * URL is fetched from a server on this machine only under a host name the operator listed (SERVICE_ALLOWED_IMAGE_HOSTS),
 * never at 127.0.0.1; a model without vision, an oversized picture and bytes that are no picture are refused with 400s
 * naming the part. One Python model for the whole file, in the environment test/e2e/transformers-engine.test.ts uses.
 */
import Anthropic from '@anthropic-ai/sdk'
import {expect} from 'chai'
import {execa} from 'execa'
import {once} from 'node:events'
import {readFile, rm, writeFile} from 'node:fs/promises'
import {createServer, type Server} from 'node:http'
import type {AddressInfo} from 'node:net'
import {dirname, join} from 'node:path'
import OpenAI from 'openai'

import {Client} from '../../src/client/index.js'
import {solidPng} from '../helpers/media.js'
import {TEST_CACHE, uvFromPyPI} from '../helpers/python-tools.js'
import {readmeBlock} from '../helpers/readme.js'
import {callApi, ROOT, type RunningService, servicectl, startService, temporaryDirectory} from '../helpers/service.js'

const MODEL = 'tiny-random-vlm'
const MAX_TOKENS = 12
const QUESTION = 'What is in this picture?'

/** The model run directly: its processor's template and the picture, greedy; prints the prompt's size and the reply. */
const DIRECT = `
import json, sys
from PIL import Image
from transformers import AutoModelForImageTextToText, AutoProcessor
folder, picture, question, limit = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
processor = AutoProcessor.from_pretrained(folder)
model = AutoModelForImageTextToText.from_pretrained(folder)
messages = [{"role": "user", "content": [{"type": "text", "text": question}, {"type": "image"}]}]
text = processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
inputs = processor(text=text, images=[Image.open(picture).convert("RGB")], return_tensors="pt")
out = model.generate(**inputs, do_sample=False, max_new_tokens=limit)
print(json.dumps([inputs["input_ids"].shape[1], processor.decode(out[0, inputs["input_ids"].shape[1]:], skip_special_tokens=True)]))
`

describe('pictures in chat on the transformers engine (tiny-random-vlm, a tiny LLaVA)', function () {
  let service: RunningService
  let pictures: Server
  let port: number
  let directory: string
  let openai: OpenAI
  const red = solidPng(40, 30, [220, 30, 30])
  const dataUrl = (bytes: Buffer) => `data:image/png;base64,${bytes.toString('base64')}`
  const ask = (url: string, model = MODEL) =>
    openai.chat.completions.create({
      max_tokens: MAX_TOKENS,
      messages: [{content: [{text: QUESTION, type: 'text'}, {image_url: {url}, type: 'image_url'}], role: 'user'}],
      model,
      temperature: 0,
    })
  const refused = (reply: Promise<unknown>) => reply.then(() => expect.fail('expected a 400'), (error: InstanceType<typeof OpenAI.BadRequestError>) => error)

  before(async function () {
    this.timeout(120_000)
    directory = await temporaryDirectory()
    pictures = createServer((request, response) => response.writeHead(request.url === '/red.png' ? 200 : 404, {'content-type': 'image/png'}).end(request.url === '/red.png' ? red : ''))
    pictures.listen(0, '127.0.0.1')
    await once(pictures, 'listening')
    port = (pictures.address() as AddressInfo).port
    const uv = await uvFromPyPI()
    service = await startService({env: {PATH: `${uv}:${process.env.PATH}`, SERVICE_ALLOWED_IMAGE_HOSTS: 'localhost', SERVICE_VIRTUALENV_DIR: join(TEST_CACHE, 'virtualenv')}})
    openai = new OpenAI({apiKey: 'unused', baseURL: `${service.url}/v1`, maxRetries: 0})
  })

  after(async () => {
    await service?.stop()
    pictures?.close()
    if (directory) await rm(directory, {force: true, recursive: true})
  })

  it('launches tiny-random-vlm as the documentation says, with no download, its abilities chat and vision', async function () {
    // A cold first run installs torch and transformers into the test cache (see transformers-engine.test.ts).
    this.timeout(900_000)
    const launch = (await readmeBlock('vision-launch', 'docs/vision.md')).replace('servicectl ', `node ${join(ROOT, 'bin/servicectl.js')} `)
    const launched = await execa('bash', ['-euo', 'pipefail', '-c', launch], {env: {SERVICE_ENDPOINT: service.url}, reject: false})
    expect(launched.exitCode, launched.stderr).to.equal(0)
    expect(launched.stdout).to.contain(`Model uid: ${MODEL}`)
    const model = (await callApi(service, 'GET', `/v1/models/${MODEL}`)).body
    expect(model).to.deep.include({model_engine: 'transformers', model_format: 'pytorch', model_type: 'LLM'})
    expect(model.model_ability).to.deep.equal(['chat', 'vision'])
  })

  it('answers a data-URL PNG from the openai client and the client library, an image block from the Anthropic SDK, and the documented example, as the model itself does', async function () {
    this.timeout(120_000)
    const {pid} = (await callApi(service, 'GET', `/v1/models/${MODEL}`)).body
    const args = (await readFile(`/proc/${pid}/cmdline`, 'utf8')).split('\0')
    const file = join(directory, 'picture.png')
    await writeFile(file, red)
    const direct = await execa(args[0], ['-c', DIRECT, dirname(args[args.indexOf('--model') + 1]), file, QUESTION, String(MAX_TOKENS)], {env: {HF_HUB_OFFLINE: '1'}})
    const [promptTokens, expected] = JSON.parse(direct.stdout.trim().split('\n').pop()!) as [number, string]

    const reply = await ask(dataUrl(red))
    expect(reply.choices[0].message.content).to.equal(expected)
    // The prompt holds the picture's 16 image tokens (32-pixel pictures in 8-pixel patches) beside the text's.
    expect(reply.usage!.prompt_tokens).to.equal(promptTokens).and.to.be.greaterThan(16 + QUESTION.length)

    const anthropic = new Anthropic({apiKey: 'unused', baseURL: `${service.url}/anthropic`, maxRetries: 0})
    const message = await anthropic.messages.create({
      max_tokens: MAX_TOKENS,
      messages: [{content: [{text: QUESTION, type: 'text'}, {source: {data: red.toString('base64'), media_type: 'image/png', type: 'base64'}, type: 'image'}], role: 'user'}],
      model: MODEL,
      temperature: 0,
    })
    expect(message.content.map((block) => (block.type === 'text' ? block.text : '')).join('')).to.equal(expected)
    expect(message.usage.input_tokens).to.equal(promptTokens)
    const stream = await openai.chat.completions.create({
      max_tokens: MAX_TOKENS,
      messages: [{content: [{text: QUESTION, type: 'text'}, {image_url: {url: dataUrl(red)}, type: 'image_url'}], role: 'user'}],
      model: MODEL,
      stream: true,
      temperature: 0,
    })
    let streamed = ''
    for await (const chunk of stream) streamed += chunk.choices[0]?.delta.content ?? ''
    expect(streamed).to.equal(expected)
    // Text alone, through the same processor.
    const words = await openai.chat.completions.create({max_tokens: 4, messages: [{content: QUESTION, role: 'user'}], model: MODEL, temperature: 0})
    expect(words.usage!.prompt_tokens).to.equal(promptTokens - 16)
    const library = await new Client(service.url).model(MODEL).chat([{content: [{text: QUESTION, type: 'text'}, {image_url: {url: dataUrl(red)}, type: 'image_url'}], role: 'user'}], {max_tokens: MAX_TOKENS, temperature: 0})
    expect(library.choices[0].message.content).to.equal(expected)
    // Ollama's templates show the picture before the text: the same tokens in another order.
    const ollama = await callApi(service, 'POST', '/api/chat', {messages: [{content: QUESTION, images: [red.toString('base64')], role: 'user'}], model: MODEL, options: {num_predict: MAX_TOKENS, temperature: 0}, stream: false})
    expect(ollama.status, JSON.stringify(ollama.body)).to.equal(200)
    expect(ollama.body.prompt_eval_count).to.equal(promptTokens)

    const example = (await readmeBlock('vision-openai', 'docs/vision.md')).replaceAll('http://127.0.0.1:9997', service.url).replace("'picture.png'", JSON.stringify(file))
    const documented = await execa('node', ['--input-type=module', '-e', example], {cwd: ROOT, reject: false})
    expect(documented.exitCode, documented.stderr).to.equal(0)
    expect(documented.stdout.split('\n').pop()).to.equal(`prompt tokens: ${promptTokens}`)
  })

  it('fetches a picture from a server on this machine only by a host name the operator listed, never at 127.0.0.1', async function () {
    this.timeout(120_000)
    const fromData = await ask(dataUrl(red))
    const fromUrl = await ask(`http://localhost:${port}/red.png`)
    expect(fromUrl.choices[0].message.content).to.equal(fromData.choices[0].message.content)
    const loopback = await refused(ask(`http://127.0.0.1:${port}/red.png`))
    expect(loopback.status).to.equal(400)
    expect(loopback.message).to.match(/names 127\.0\.0\.1, at 127\.0\.0\.1: an address of this machine or a private network.*SERVICE_ALLOWED_IMAGE_HOSTS/)
    expect((loopback.error as {param?: string}).param).to.equal('messages[0].content[1].image_url.url')
  })

  it('refuses a picture for a model without vision, an oversized picture and bytes that are no picture, naming the part, and keeps serving', async function () {
    this.timeout(120_000)
    const launched = await servicectl(['launch', '-n', 'tiny-random-llm', '--model-engine', 'llama.cpp', '-e', service.url])
    expect(launched.exitCode, launched.stderr).to.equal(0)
    const blind = await refused(ask(dataUrl(red), 'tiny-random-llm'))
    expect(blind.message).to.match(/model tiny-random-llm \(tiny-random-llm\) cannot see images: it has no vision ability/)
    const oversized = await refused(ask(dataUrl(Buffer.concat([red, Buffer.alloc(8 * 1024 * 1024)]))))
    expect(oversized.message).to.match(/over 8 MiB, the most a picture may have/)
    const words = await refused(ask(dataUrl(Buffer.from('no picture here'))))
    expect(words.message).to.match(/is not a picture this service reads: its bytes are not a PNG, JPEG, WebP or GIF file/)
    for (const error of [blind, oversized, words]) expect((error.error as {param?: string}).param).to.equal('messages[0].content[1].image_url.url')
    expect((await ask(dataUrl(red))).choices[0].finish_reason).to.be.oneOf(['length', 'stop'])
  })
})
