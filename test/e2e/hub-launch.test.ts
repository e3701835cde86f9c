/**
 * Launching a hub model by name (`hf.co/{user}/{repo}:{quant}`, as Ollama and llama-server take it) through a real
 * `service-local` and `servicectl`, against the local hub (test/helpers/fake-hub.ts) serving random llama GGUFs: the
 * repository is listed, the quantization asked for is registered and downloaded, and the model answers chats by that name.
 */
import {expect} from 'chai'
import {readdir} from 'node:fs/promises'
import {join} from 'node:path'

import {writeRandomLlamaGguf, writeRandomLlamaGgufSplit} from '../../plugins/engine-llama-cpp/src/gguf/random-llama.js'
import {apiKeyOf, writeTestAuthConfig} from '../helpers/auth.js'
import {FakeHub} from '../helpers/fake-hub.js'
import {callApi, closedPort, type RunningService, servicectl, startService, temporaryDirectory, until} from '../helpers/service.js'

const REPO = 'test-org/Tiny-0.5B-GGUF'
const SPLIT_REPO = 'test-org/tiny-split-GGUF'
const SPLIT_PARTS = ['00001-of-00003', '00002-of-00003', '00003-of-00003']

describe('launching a hub model by name (hf.co/{user}/{repo}:{quant})', function () {
  let hub: FakeHub
  let service: RunningService
  let directory: string
  const api = (method: string, path: string, body?: unknown, headers?: Record<string, string>) => callApi(service, method, path, body, headers)
  const chat = (model: string) => api('POST', '/v1/chat/completions', {max_tokens: 3, messages: [{content: 'Hi', role: 'user'}], model})
  const cacheOf = (name: string) => join(service.home, 'cache', name)

  before(async () => {
    directory = await temporaryDirectory()
    const tiny = join(directory, 'tiny.gguf')
    await writeRandomLlamaGguf(tiny)
    const parts = SPLIT_PARTS.map((part) => join(directory, `part-${part}.gguf`))
    await writeRandomLlamaGgufSplit(parts)
    hub = await FakeHub.start()
    await hub.addRepo(REPO, {'README.md': tiny, 'Tiny-0.5B-F16.gguf': tiny, 'Tiny-0.5B-Q4_K_M.gguf': tiny, 'Tiny-0.5B-Q8_0.gguf': tiny, 'mmproj-Tiny-F16.gguf': tiny})
    await hub.addRepo(SPLIT_REPO, Object.fromEntries(SPLIT_PARTS.map((part, index) => [`Q8_0/tiny-split-Q8_0-${part}.gguf`, parts[index]])))
    service = await startService({env: {HF_ENDPOINT: hub.url, MODELSCOPE_ENDPOINT: hub.url}})
  })

  after(async () => {
    await service?.stop()
    await hub?.stop()
  })

  it('servicectl launch -n hf.co/…:q4_k_m lists the repo, registers the GGUF, downloads it, and the model chats by that name', async () => {
    const launched = await servicectl(['launch', '-n', `hf.co/${REPO}:q4_k_m`], {env: {SERVICE_ENDPOINT: service.url}})
    expect(launched.exitCode, launched.stderr).to.equal(0)
    expect(launched.stdout.trim()).to.equal('Model uid: test-org--Tiny-0.5B-GGUF--Q4_K_M')
    expect(launched.stderr).to.match(/^Downloading Tiny-0.5B-Q4_K_M.gguf \(\d+\.\d kB\) from huggingface test-org\/Tiny-0.5B-GGUF\.$/m)
    expect(hub.fileRequests().map((request) => decodeURIComponent(request.url))).to.have.length(1).and.to.satisfy((urls: string[]) => urls[0].includes('Tiny-0.5B-Q4_K_M.gguf'))

    for (const name of [`hf.co/${REPO}:Q4_K_M`, `HF.CO/${REPO.toLowerCase()}:q4_k_m`, 'test-org--Tiny-0.5B-GGUF--Q4_K_M']) {
      const answer = await chat(name)
      expect(answer.status, name).to.equal(200)
      expect(answer.body.choices[0].message.role).to.equal('assistant')
    }

    const ollama = await api('POST', '/api/chat', {messages: [{content: 'Hi', role: 'user'}], model: `hf.co/${REPO}:Q4_K_M`, options: {num_predict: 3}, stream: false})
    expect(ollama.status, JSON.stringify(ollama.body)).to.equal(200)
    expect(ollama.body.message.role).to.equal('assistant')

    const registration = await api('GET', '/v1/model_registrations/LLM/test-org--Tiny-0.5B-GGUF--Q4_K_M')
    expect(registration.body.model_specs[0]).to.deep.include({model_format: 'ggufv2', model_size_in_billions: '0_5'})
    expect(registration.body.model_specs[0].model_src.huggingface).to.deep.include({model_file_name_template: 'Tiny-0.5B-Q4_K_M.gguf', model_id: REPO, quantizations: ['Q4_K_M']})
    expect((await api('DELETE', `/v1/models/test-org--Tiny-0.5B-GGUF--Q4_K_M`)).status).to.equal(200)
  })

  it('POST /v1/models takes the name too: another quantization, huggingface.co/…, and Q4_K_M by default (already cached)', async () => {
    expect(await api('POST', '/v1/models', {model_name: `huggingface.co/${REPO}:Q8_0`})).to.deep.equal({body: {model_uid: 'test-org--Tiny-0.5B-GGUF--Q8_0'}, status: 200})
    expect((await readdir(cacheOf('test-org--Tiny-0.5B-GGUF--Q8_0--0_5B--ggufv2--Q8_0'))).sort()).to.deep.equal(['Tiny-0.5B-Q8_0.gguf', 'manifest.json'])
    const files = hub.fileRequests().length
    expect(await api('POST', '/v1/models', {model_name: `hf.co/${REPO}`, model_uid: 'by-default'})).to.deep.equal({body: {model_uid: 'by-default'}, status: 200})
    expect(hub.fileRequests().length, 'files downloaded again').to.equal(files)
    expect((await api('GET', '/v1/models/by-default')).body).to.deep.include({model_name: 'test-org--Tiny-0.5B-GGUF--Q4_K_M', quantization: 'Q4_K_M'})
    for (const uid of ['test-org--Tiny-0.5B-GGUF--Q8_0', 'by-default']) expect((await api('DELETE', `/v1/models/${uid}`)).status).to.equal(200)
  })

  it('downloads every part of a split GGUF set and loads it from the first part', async () => {
    const launched = await api('POST', '/v1/models', {model_name: `hf.co/${SPLIT_REPO}:q8_0`})
    expect(launched.status, JSON.stringify(launched.body)).to.equal(200)
    const entry = (await readdir(join(service.home, 'cache'))).find((name) => name.startsWith('test-org--tiny-split-GGUF--Q8_0'))!
    expect((await readdir(join(cacheOf(entry), 'Q8_0'))).sort()).to.deep.equal(SPLIT_PARTS.map((part) => `tiny-split-Q8_0-${part}.gguf`))
    expect((await chat(`hf.co/${SPLIT_REPO}:Q8_0`)).status).to.equal(200)
    expect((await api('DELETE', `/v1/models/${launched.body.model_uid}`)).status).to.equal(200)
  })

  it('downloads from ModelScope for a modelscope.cn/… name, through its file API', async () => {
    expect(await api('POST', '/v1/models', {model_name: `modelscope.cn/${REPO}:f16`})).to.deep.equal({body: {model_uid: 'ms--test-org--Tiny-0.5B-GGUF--F16'}, status: 200})
    const urls = hub.requests.map((request) => decodeURIComponent(request.url))
    expect(urls).to.include(`/api/v1/models/${REPO}/repo/files?Revision=master&Recursive=true`)
    expect(urls.some((url) => url.startsWith(`/api/v1/models/${REPO}/repo?`) && url.includes('FilePath=Tiny-0.5B-F16.gguf'))).to.equal(true)
    expect((await api('DELETE', '/v1/models/ms--test-org--Tiny-0.5B-GGUF--F16')).status).to.equal(200)
  })

  it('refuses a quantization the repo lacks listing the ones it has, a repo that does not exist, and names that reach beyond a repo', async () => {
    const missing = await api('POST', '/v1/models', {model_name: `hf.co/${REPO}:Q3_K_S`})
    expect(missing.status).to.equal(400)
    expect(missing.body.error).to.include({message: `hf.co/${REPO.toLowerCase()} has no quantization "Q3_K_S"; it has: F16, Q4_K_M, Q8_0.`, param: 'model_name'})
    const cli = await servicectl(['launch', '-n', `hf.co/${REPO}:Q3_K_S`], {env: {SERVICE_ENDPOINT: service.url}})
    expect(cli.exitCode).to.equal(1)
    expect(cli.stderr).to.contain('it has: F16, Q4_K_M, Q8_0.')

    const absent = await api('POST', '/v1/models', {model_name: 'hf.co/test-org/no-such-GGUF:Q4_K_M'})
    expect(absent.status).to.equal(404)
    expect(absent.body.error).to.include({code: 'hub_not_found', param: 'model_name'})
    expect(absent.body.error.message).to.match(/^there is no repository test-org\/no-such-GGUF on huggingface/)

    for (const name of ['hf.co/../etc:Q4_K_M', 'hf.co/test-org/a..b:Q4_K_M', 'hf.co/test-org/Tiny/x:Q4_K_M', 'hf.co/test-org/Tiny:../../x', `hf.co/test-org/${'a'.repeat(97)}`, `hf.co/u/${'a'.repeat(300)}`]) {
      const refused = await api('POST', '/v1/models', {model_name: name})
      expect(refused.status, name).to.equal(400)
      expect(refused.body.error.param, name).to.equal('model_name')
    }

    expect((await api('GET', '/v1/models')).body.data).to.deep.equal([])
  })

  it('relaunches a hub model after a restart, and launches its name again, without asking the hub', async () => {
    const home = await temporaryDirectory()
    const first = await startService({env: {HF_ENDPOINT: hub.url}, home})
    expect((await callApi(first, 'POST', '/v1/models', {model_name: `hf.co/${REPO}:Q8_0`})).status).to.equal(200)
    await first.stop()
    const offline = await startService({env: {HF_ENDPOINT: `http://127.0.0.1:${await closedPort()}`}, home})
    try {
      const running = await until(async () => {
        const models = (await callApi(offline, 'GET', '/v1/models')).body.data
        return models.some((model: {status: string}) => model.status === 'ready') ? models : undefined
      }, 'the model to be restored', 30_000)
      expect(running.map((model: {id: string}) => model.id)).to.deep.equal(['test-org--Tiny-0.5B-GGUF--Q8_0'])
      expect((await callApi(offline, 'DELETE', `/v1/models/hf.co%2F${REPO.replace('/', '%2F')}:Q8_0`)).status).to.equal(200)
      expect(await callApi(offline, 'POST', '/v1/models', {model_name: `hf.co/${REPO}:q8_0`, model_uid: 'again'})).to.deep.equal({body: {model_uid: 'again'}, status: 200})
    } finally {
      await offline.stop()
    }
  })

  it('needs models:register to launch a hub model not registered yet, and only models:start once it is', async () => {
    const home = await temporaryDirectory()
    const guarded = await startService({args: ['--auth-config', await writeTestAuthConfig(home)], env: {HF_ENDPOINT: hub.url}})
    try {
      const as = (user: string) => ({authorization: `Bearer ${apiKeyOf(user)}`})
      const launch = (user: string) => callApi(guarded, 'POST', '/v1/models', {model_name: `hf.co/${REPO}:Q8_0`}, as(user))
      const refused = await launch('only-models:start')
      expect(refused.status).to.equal(403)
      expect(refused.body.error.message).to.contain('needs the permission models:register')
      expect((await launch('all-but-models:stop')).status).to.equal(200)
      expect((await callApi(guarded, 'DELETE', '/v1/models/test-org--Tiny-0.5B-GGUF--Q8_0', undefined, as('root'))).status).to.equal(200)
      expect((await launch('only-models:start')).status).to.equal(200)
    } finally {
      await guarded.stop()
    }
  })
})

describe('servicectl search (the catalogue, and the hub with --hub)', function () {
  let hub: FakeHub
  let service: RunningService
  const search = (args: string[]) => servicectl(['search', ...args], {env: {SERVICE_ENDPOINT: service.url}})

  before(async () => {
    const directory = await temporaryDirectory()
    const tiny = join(directory, 'tiny.gguf')
    await writeRandomLlamaGguf(tiny)
    hub = await FakeHub.start()
    await hub.addRepo(REPO, {'Tiny-0.5B-F16.gguf': tiny, 'Tiny-0.5B-Q4_K_M.gguf': tiny, 'Tiny-0.5B-Q8_0.gguf': tiny})
    await hub.addRepo('test-org/tiny-safetensors', {'config.json': tiny, 'model.safetensors': tiny})
    service = await startService({env: {HF_ENDPOINT: hub.url}})
  })

  after(async () => {
    await service?.stop()
    await hub?.stop()
  })

  it('finds catalogue models of every type by their words, with sizes, quantizations and whether the smallest launch fits', async () => {
    const found = await search(['tiny', 'random', 'llm', '--json'])
    expect(found.exitCode, found.stderr).to.equal(0)
    const reply = JSON.parse(found.stdout)
    // The best match first; tiny-random-vlm, also a tiny random model of type LLM, follows.
    expect(reply.results.map((result: {model_name: string}) => result.model_name)[0]).to.equal('tiny-random-llm')
    expect(reply.results[0]).to.deep.include({formats: ['ggufv2', 'pytorch'], model_type: 'LLM', quantizations: ['f32'], sizes: ['0_0001'], source: 'catalogue'})
    expect(reply.results[0].memory).to.deep.include({fits: true, launch: '0_0001B ggufv2 f32'})
    expect(reply.results[0].memory.total_bytes).to.be.above(100_000)
    expect(hub.requests, 'requests to the hub without --hub').to.deep.equal([])

    const types = JSON.parse((await search(['tiny-random', '--json'])).stdout).results.map((result: {model_type: string}) => result.model_type)
    expect(new Set(types)).to.include.members(['LLM', 'embedding', 'rerank', 'image', 'audio'])
    const table = await search(['tiny', 'random', 'embedding'])
    expect(table.stdout.split('\n')[0]).to.match(/^Type\s+Name\s+Sizes\s+Quantizations\s+Memory\s+Source$/)
    expect(table.stdout).to.match(/^embedding\s+tiny-random-embedding\s+f32\s+fits: \d+(\.\d)? kB at ggufv2 f32\s+catalogue$/m)
  })

  it('searches the hub with --hub, naming each repo as it launches, with the quantizations its files carry', async () => {
    const found = await search(['tiny', '--hub'])
    expect(found.exitCode, found.stderr).to.equal(0)
    expect(found.stdout).to.match(/^LLM\s+hf\.co\/test-org\/Tiny-0\.5B-GGUF\s+0_5\s+F16, Q4_K_M, Q8_0\s+huggingface$/m)
    expect(found.stdout).to.match(/^LLM\s+hf\.co\/test-org\/tiny-safetensors\s+huggingface$/m)
    expect(hub.requests.map((request) => request.url)).to.include('/api/models?search=tiny&limit=20&full=true')

    hub.failNext(1, 503, '/api/models?')
    const down = await search(['tiny', 'random', 'llm', '--hub'])
    expect(down.exitCode).to.equal(0)
    expect(down.stdout).to.match(/^LLM\s+tiny-random-llm\s/m)
    expect(down.stderr).to.match(/^The hub was not searched: huggingface answered 503/m)
  })

  it('refuses a search with no words, too many, or a limit past its bound, naming the field', async () => {
    const call = (query: string) => callApi(service, 'GET', `/v1/catalogue/search?${query}`)
    for (const [query, param] of [['q=', 'q'], [`q=${'a '.repeat(17)}`, 'q'], [`q=${'a'.repeat(201)}`, 'q'], ['q=tiny&limit=51', 'limit'], ['q=tiny&limit=0', 'limit'], ['q=tiny&hub=maybe', 'hub']]) {
      const {body, status} = await call(query)
      expect(status, query).to.equal(400)
      expect(body.error.param, query).to.equal(param)
    }

    const none = await search(['no-such-words-anywhere'])
    expect(none.stdout.trim()).to.equal('Nothing matches "no-such-words-anywhere"; try --hub to search the hub as well.')
  })
})
