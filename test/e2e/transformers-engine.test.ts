/**
 * The Transformers engine end to end on this CPU machine: `servicectl launch -n tiny-random-llm --model-engine
 * transformers -f pytorch` makes the engine's virtual environment (uv from PyPI; torch's CPU build from the machine's
 * wheels through the inherited pip configuration), has transformers build the tiny random model from a config and
 * save it as safetensors, starts python/host.py from the environment, and the official openai client chats with it,
 * streaming and not. The environment lives in the test cache outside the repository, so later runs reuse it.
 */
import {expect} from 'chai'
import {readFile, rm} from 'node:fs/promises'
import {Agent, request} from 'node:http'
import {join} from 'node:path'
import OpenAI from 'openai'

import {TEST_CACHE, uvFromPyPI} from '../helpers/python-tools.js'
import {callApi, type RunningService, servicectl, startService, until} from '../helpers/service.js'

describe('the transformers engine (service-local, tiny-random-llm as safetensors)', function () {
  let service: RunningService
  let openai: OpenAI
  const modelLog = () => readFile(join(service.home, 'logs', 'models', 'tiny-random-llm.log'), 'utf8').catch(() => '')

  before(async function () {
    this.timeout(120_000)
    const uv = await uvFromPyPI()
    service = await startService({env: {PATH: `${uv}:${process.env.PATH}`, SERVICE_VIRTUALENV_DIR: join(TEST_CACHE, 'virtualenv')}})
    openai = new OpenAI({apiKey: 'unused', baseURL: `${service.url}/v1`, maxRetries: 0})
  })

  after(async () => {
    await service?.stop()
  })

  it('refuses an engine parameter the engine does not accept, naming it', async () => {
    const refused = await callApi(service, 'POST', '/v1/models', {dtype: 'float8', model_engine: 'transformers', model_format: 'pytorch', model_name: 'tiny-random-llm'})
    expect(refused.status).to.equal(400)
    expect(refused.body.error.param).to.equal('dtype')
  })

  it('launches tiny-random-llm -f pytorch with no download: generated safetensors, run from the environment', async function () {
    // A cold first run installs torch and transformers into the test cache (docs/getting-started.md, Run the tests, gives the time it takes).
    this.timeout(900_000)
    const launched = await servicectl(['launch', '-n', 'tiny-random-llm', '--model-engine', 'transformers', '-f', 'pytorch', '--dtype', 'float32', '-e', service.url])
    expect(launched.exitCode, launched.stderr).to.equal(0)
    expect(launched.stdout).to.contain('Model uid: tiny-random-llm')
    const log = await modelLog()
    expect(log).to.match(/loaded \S+tiny-random-llm--0_0001B--pytorch--none \(LLM\) on cpu with transformers 5\.\d+\.\d+, torch 2\.13\.0\+cpu/)
    const cached = (await callApi(service, 'GET', '/v1/cache/models')).body.list as Array<{model_version: string; hub: string}>
    expect(cached).to.deep.include.members([{...cached.find((entry) => entry.model_version === 'tiny-random-llm--0_0001B--pytorch--none')!, hub: 'generated'}])
    const model = (await callApi(service, 'GET', '/v1/models/tiny-random-llm')).body
    expect(model).to.deep.include({model_engine: 'transformers', model_format: 'pytorch'})
  })

  it('chats through the official openai client with the chat template, streaming and not, the same greedy reply', async () => {
    const messages = [{content: 'Say something.', role: 'user' as const}]
    const reply = await openai.chat.completions.create({max_tokens: 12, messages, model: 'tiny-random-llm', temperature: 0})
    const text = reply.choices[0].message.content!
    expect(reply.choices[0].finish_reason).to.be.oneOf(['length', 'stop'])
    // The prompt is ChatML from the model's template, <|im_start|>user\nSay something.<|im_end|>\n<|im_start|>assistant\n:
    // three special tokens, and one token per byte of the rest (30).
    expect(reply.usage).to.deep.include({prompt_tokens: 33})
    expect(reply.usage!.completion_tokens).to.be.within(1, 12)

    const stream = await openai.chat.completions.create({max_tokens: 12, messages, model: 'tiny-random-llm', stream: true, temperature: 0})
    let streamed = ''
    let finish: string | null = null
    for await (const chunk of stream) {
      streamed += chunk.choices[0]?.delta.content ?? ''
      finish = chunk.choices[0]?.finish_reason ?? finish
    }

    expect(streamed).to.equal(text)
    expect(finish).to.equal(reply.choices[0].finish_reason)

    const completion = await openai.completions.create({max_tokens: 5, model: 'tiny-random-llm', prompt: 'Once upon a time', temperature: 0})
    expect(completion.usage).to.deep.include({prompt_tokens: 16})
    expect(completion.choices[0].text).to.be.a('string')
  })

  it('renders tools into the chat template unless tool_choice is "none", and refuses a call it cannot force, naming tool_choice', async () => {
    const tool = {function: {description: 'The weather in a city.', name: 'get_weather', parameters: {properties: {city: {type: 'string'}}, type: 'object'}}, type: 'function' as const}
    const messages = [{content: 'Say something.', role: 'user' as const}]
    const ask = (extra: Record<string, unknown>) => openai.chat.completions.create({max_tokens: 4, messages, model: 'tiny-random-llm', temperature: 0, ...extra})
    const plain = await ask({})
    const withTools = await ask({tools: [tool]})
    // One token per byte: the system turn the template adds lists the tool as JSON, its name and description in it.
    const listed = JSON.stringify(tool.function.description).length + JSON.stringify(tool.function.name).length
    expect(withTools.usage!.prompt_tokens - plain.usage!.prompt_tokens).to.be.greaterThan(listed)
    expect((await ask({tool_choice: 'none', tools: [tool]})).usage!.prompt_tokens).to.equal(plain.usage!.prompt_tokens)
    // A random model writes no call: its text is the answer, parsed and all, streamed the same.
    expect(withTools.choices[0].finish_reason).to.be.oneOf(['length', 'stop'])
    const stream = await openai.chat.completions.create({max_tokens: 4, messages, model: 'tiny-random-llm', stream: true, temperature: 0, tools: [tool]})
    let streamed = ''
    for await (const chunk of stream) streamed += chunk.choices[0]?.delta.content ?? ''
    expect(streamed).to.equal(withTools.choices[0].message.content)
    for (const tool_choice of ['required', {function: {name: 'get_weather'}, type: 'function'}]) {
      const refused = await callApi(service, 'POST', '/v1/chat/completions', {max_tokens: 4, messages, model: 'tiny-random-llm', tool_choice, tools: [tool]})
      expect(refused.status).to.equal(400)
      expect(refused.body.error.param).to.equal('tool_choice')
      expect(refused.body.error.message).to.contain('llama.cpp, vLLM or SGLang')
    }
  })

  it('splits the reasoning of a model launched to reason: a prefill opens it, the prompt tail says so, the switch drops it', async function () {
    this.timeout(300_000)
    const launched = await callApi(service, 'POST', '/v1/models', {dtype: 'float32', model_engine: 'transformers', model_format: 'pytorch', model_name: 'tiny-random-llm', model_uid: 'tiny-thinker', reasoning_format: 'think'})
    expect(launched.status, JSON.stringify(launched.body)).to.equal(200)
    try {
      // A random model never opens a reasoning block: the prefill does, as a DeepSeek-R1 template's prompt does.
      const request = {continue_final_message: true, max_tokens: 6, messages: [{content: 'Think.', role: 'user'}, {content: '<think>\n', role: 'assistant'}], model: 'tiny-thinker', temperature: 0}
      const answer = (await callApi(service, 'POST', '/v1/chat/completions', request)).body
      expect(answer.choices[0].message.reasoning_content).to.be.a('string').and.not.equal('')
      expect(answer.choices[0].message.content).to.equal('')
      // The prompt keeps the prefill open: ChatML's <|im_start|>assistant\n<think>\n, without an end of turn.
      const plain = (await callApi(service, 'POST', '/v1/chat/completions', {...request, continue_final_message: undefined, messages: request.messages.slice(0, 1)})).body
      expect(answer.usage.prompt_tokens).to.be.greaterThan(plain.usage.prompt_tokens)
      const off = (await callApi(service, 'POST', '/v1/chat/completions', {...request, enable_thinking: false})).body
      expect(off.choices[0].message.reasoning_content).to.equal(null)
    } finally {
      await callApi(service, 'DELETE', '/v1/models/tiny-thinker')
    }
  })

  it("keeps its connection open after a stream, so the service's next request to it needs no new one", async () => {
    const {pid} = (await callApi(service, 'GET', '/v1/models/tiny-random-llm')).body
    const args = (await readFile(`/proc/${pid}/cmdline`, 'utf8')).split('\0')
    const port = Number(args[args.indexOf('--port') + 1])
    const agent = new Agent({keepAlive: true, maxSockets: 1})
    const streamed = () =>
      new Promise<{body: string; reused: boolean}>((resolve, reject) => {
        const body = JSON.stringify({max_tokens: 4, messages: [{content: 'Hi', role: 'user'}], stream: true, temperature: 0})
        const sent = request({agent, headers: {'content-type': 'application/json'}, host: '127.0.0.1', method: 'POST', path: '/v1/chat/completions', port}, (response) => {
          let text = ''
          response.setEncoding('utf8')
          response.on('data', (chunk: string) => (text += chunk))
          response.on('end', () => resolve({body: text, reused: sent.reusedSocket}))
        })
        sent.on('error', reject)
        sent.end(body)
      })
    try {
      const first = await streamed()
      const second = await streamed()
      for (const {body} of [first, second]) expect(body).to.match(/data: \[DONE\]\n\n$/)
      expect(second.reused, "the second request went over the first one's connection").to.equal(true)
    } finally {
      agent.destroy()
    }
  })

  it('a client that leaves mid-stream stops the generation in the program', async () => {
    const controller = new AbortController()
    const stream = await openai.chat.completions.create(
      {max_tokens: 1900, messages: [{content: 'Go on and on.', role: 'user'}], model: 'tiny-random-llm', stream: true, temperature: 0},
      {signal: controller.signal},
    )
    let pieces = 0
    const read = async () => {
      for await (const chunk of stream) if (chunk.choices[0]?.delta.content && ++pieces === 2) controller.abort()
    }

    await read().catch(() => {})
    const line = await until(async () => (await modelLog()).match(/client disconnected after (\d+) pieces/)?.[0], 'the program to see the disconnect', 60_000)
    expect(Number(line.match(/after (\d+)/)![1])).to.be.below(1900)
    const reply = await openai.chat.completions.create({max_tokens: 3, messages: [{content: 'Still there?', role: 'user'}], model: 'tiny-random-llm'})
    expect(reply.choices[0].message.content).to.be.a('string')
  })

  it('serves embeddings and rerank with tiny-random-embedding and tiny-random-rerank as safetensors, made the same way', async function () {
    this.timeout(600_000)
    // Launched side by side: each imports torch twice (to make its weights, then to serve them), on two cores.
    const launches = await Promise.all(
      ['tiny-random-embedding', 'tiny-random-rerank'].map((name) => callApi(service, 'POST', '/v1/models', {model_engine: 'transformers', model_format: 'pytorch', model_name: name})),
    )
    for (const launched of launches) expect(launched.status, JSON.stringify(launched.body)).to.equal(200)

    const embeddings = await openai.embeddings.create({input: ['hello there', 'a second text'], model: 'tiny-random-embedding'})
    expect(embeddings.data.map((item) => item.index)).to.deep.equal([0, 1])
    for (const {embedding} of embeddings.data) {
      expect(embedding).to.have.length(64)
      expect(Math.hypot(...embedding)).to.be.closeTo(1, 1e-4)
    }

    expect(embeddings.data[0].embedding).not.to.deep.equal(embeddings.data[1].embedding)
    // [CLS] and [SEP] around one token per byte.
    expect(embeddings.usage).to.deep.include({prompt_tokens: 13 + 15})

    const ranked = await callApi(service, 'POST', '/v1/rerank', {documents: ['one document', 'another one', 'a third'], model: 'tiny-random-rerank', query: 'which one?'})
    expect(ranked.status, JSON.stringify(ranked.body)).to.equal(200)
    expect(ranked.body.results.map((result: {index: number}) => result.index).sort()).to.deep.equal([0, 1, 2])
    for (const result of ranked.body.results) expect(result.relevance_score).to.be.within(0, 1)
    for (const name of ['tiny-random-embedding', 'tiny-random-rerank']) expect((await callApi(service, 'DELETE', `/v1/models/${name}`)).status).to.equal(200)
  })

  it('terminate stops the program, leaving the environment for the next launch', async () => {
    expect((await callApi(service, 'DELETE', '/v1/models/tiny-random-llm')).status).to.equal(200)
    await rm(join(service.home, 'cache'), {force: true, recursive: true})
  })
})
