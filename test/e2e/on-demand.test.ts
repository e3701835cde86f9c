/**
 * Models on demand and idle unloading against a real `service-local` with tiny-random-llm (made locally): a model
 * launched with keep_alive 1s is unloaded once idle and stays known; a request brings it back with the same uid
 * (the official openai client, streaming), two concurrent first requests share one launch, a client that will not
 * wait gets 503 with Retry-After, Ollama's keep_alive 0 unloads after the request; under access control a caller
 * without `models:start` launches nothing. The examples of docs/on-demand.md run as written.
 */
import {expect} from 'chai'
import {execa} from 'execa'
import {chmod, mkdir, readFile, writeFile} from 'node:fs/promises'
import {join} from 'node:path'
import OpenAI from 'openai'

import {apiKeyOf, writeTestAuthConfig} from '../helpers/auth.js'
import {readmeBlock} from '../helpers/readme.js'
import {callApi, ROOT, type RunningService, startService, temporaryDirectory, until} from '../helpers/service.js'

const TINY = {model_engine: 'llama.cpp', model_name: 'tiny-random-llm', n_ctx: 256, n_threads: 1}
const CHAT = {max_tokens: 3, messages: [{content: 'Hi', role: 'user'}]}

describe('models on demand and idle unload (service-local)', function () {
  this.timeout(240_000)
  let home: string
  let service: RunningService
  const api = (method: string, path: string, body?: unknown, headers?: Record<string, string>) => callApi(service, method, path, body, headers)
  const running = async () => ((await api('GET', '/v1/models')).body.data as Array<{id: string}>).map((model) => model.id)
  const eventKinds = async (uid: string) => ((await api('GET', `/v1/models/${uid}/events`)).body as Array<{kind: string; details: Record<string, unknown>}>)
  const launches = async (uid: string) => ((await api('GET', '/v1/launch_history?model_name=tiny-random-llm')).body as Array<{model_uid: string}>).filter((record) => record.model_uid === uid)
  const unloaded = (uid: string) => until(async () => ((await running()).includes(uid) ? undefined : true), `${uid} to be unloaded`, 60_000)

  before(async () => {
    home = await temporaryDirectory()
    service = await startService({home})
  })

  after(async () => service?.stop())

  it('unloads a model idle past its keep_alive, keeps it known, and counts the unload', async () => {
    expect((await api('POST', '/v1/models', {...TINY, keep_alive: '1s', model_uid: 'idler'})).status).to.equal(200)
    await unloaded('idler')
    const unload = (await eventKinds('idler')).find((event) => event.kind === 'unload')
    expect(unload?.details).to.deep.equal({reason: 'idle'})
    // Written just after the unload: it is not restored at the next start, and a request brings it back.
    await until(async () => {
      const desired = JSON.parse(await readFile(join(home, 'desired-models.json'), 'utf8')) as {models: Array<{launch: {model_uid: string}; unloaded?: {reason: string}}>}
      return desired.models.find((model) => model.launch.model_uid === 'idler')?.unloaded?.reason === 'idle' ? true : undefined
    }, 'the desired models to say idler was unloaded when idle')
    const metrics = (await fetch(`${service.url}/metrics`).then((response) => response.text())).split('\n')
    expect(metrics).to.include('service_model_unloads_total{model_name="idler",reason="idle"} 1')
  })

  it('brings an unloaded model back on demand with the same uid, and keeps it loaded while a stream runs', async () => {
    const openai = new OpenAI({apiKey: 'x', baseURL: `${service.url}/v1`, maxRetries: 0})
    const stream = await openai.chat.completions.create({...CHAT, model: 'idler', stream: true})
    let chunks = 0
    let lastChunkAt = 0
    for await (const chunk of stream) {
      expect(chunk.model).to.equal('idler')
      if (chunks++ === 0) expect(await running()).to.include('idler')
      lastChunkAt = Date.now()
    }

    expect(chunks).to.be.greaterThan(0)
    expect((await eventKinds('idler')).findLast((event) => event.kind === 'launch')?.details).to.include({on_demand: true})
    await unloaded('idler')
    // Its keep-alive counts from the end of the answer (the service's clock and this one are the same machine's).
    const unload = (await eventKinds('idler')).findLast((event) => event.kind === 'unload') as unknown as {timestamp: number}
    expect(unload.timestamp).to.be.at.least(lastChunkAt)
  })

  it('launches once for two concurrent first requests', async () => {
    const before = (await launches('idler')).length
    const openai = new OpenAI({apiKey: 'x', baseURL: `${service.url}/v1`, maxRetries: 0})
    const replies = await Promise.all([openai.chat.completions.create({...CHAT, model: 'idler'}), openai.completions.create({max_tokens: 3, model: 'idler', prompt: 'Once'})])
    expect(replies.map((reply) => reply.model)).to.deep.equal(['idler', 'idler'])
    expect((await launches('idler')).length).to.equal(before + 1)
    await unloaded('idler')
  })

  it('answers 503 with Retry-After and the launch progress to a client that will not wait, and launches the model meanwhile', async () => {
    const refused = await api('POST', '/v1/chat/completions', {...CHAT, model: 'idler'}, {prefer: 'respond-async'})
    expect(refused.status).to.equal(503)
    expect(refused.body.error.code).to.equal('model_loading')
    expect(refused.body.error.message).to.match(/^model idler is loading on demand \(\w+, \d+%\); retry in 5 s/)
    const retried = await until(async () => {
      const response = await fetch(`${service.url}/v1/chat/completions`, {body: JSON.stringify({...CHAT, model: 'idler'}), headers: {'content-type': 'application/json', prefer: 'respond-async'}, method: 'POST'})
      if (response.status === 503) expect(response.headers.get('retry-after')).to.equal('5')
      return response.status === 200 ? response : undefined
    }, 'idler to be ready', 60_000)
    expect(retried.status).to.equal(200)
    await unloaded('idler')
  })

  it("unloads after the request with Ollama's keep_alive 0, and leaves names never launched a 404", async () => {
    const generated = await api('POST', '/api/generate', {keep_alive: 0, model: 'idler', options: {num_predict: 2}, prompt: 'Hi', stream: false})
    expect(generated.status).to.equal(200)
    await unloaded('idler')
    expect((await eventKinds('idler')).findLast((event) => event.kind === 'unload')?.details).to.deep.equal({reason: 'keep_alive_0'})
    expect((await api('POST', '/v1/chat/completions', {...CHAT, model: 'never-launched'})).status).to.equal(404)
    const bad = await api('POST', '/api/chat', {keep_alive: 'soon', messages: [{content: 'Hi', role: 'user'}], model: 'idler'})
    expect(bad.status).to.equal(400)
    expect(bad.body.error).to.match(/keep_alive/)
  })
})

describe('models on demand under access control (service-local)', function () {
  this.timeout(240_000)
  let service: RunningService
  const as = (user: string, method: string, path: string, body?: unknown) => callApi(service, method, path, body, {authorization: `Bearer ${apiKeyOf(user)}`})

  before(async () => {
    const directory = await temporaryDirectory()
    service = await startService({args: ['--auth-config', await writeTestAuthConfig(directory)], home: directory})
  })

  after(async () => service?.stop())

  it('launches a known model only for a caller who may start models', async () => {
    expect((await as('root', 'POST', '/v1/models', {...TINY, keep_alive: 0, model_uid: 'guarded'})).status).to.equal(200)
    await until(async () => ((await as('root', 'GET', '/v1/models')).body.data.length === 0 ? true : undefined), 'guarded to be unloaded', 60_000)
    const refused = await as('only-models:read', 'POST', '/v1/chat/completions', {...CHAT, model: 'guarded'})
    expect(refused.status).to.equal(404)
    expect((await as('root', 'GET', '/v1/models')).body.data).to.deep.equal([])
    const served = await as('all-but-models:stop', 'POST', '/v1/chat/completions', {...CHAT, keep_alive: -1, model: 'guarded'})
    expect(served.status).to.equal(200)
    expect((await as('root', 'GET', '/v1/models')).body.data.map((model: {id: string}) => model.id)).to.deep.equal(['guarded'])
  })
})

describe('docs/on-demand.md examples', function () {
  this.timeout(240_000)
  let service: RunningService
  let directory: string
  let env: Record<string, string>
  const page = 'docs/on-demand.md'
  const running = async () => ((await callApi(service, 'GET', '/v1/models')).body.data as Array<{id: string}>).map((model) => model.id)
  const unloaded = () => until(async () => ((await running()).includes('idle-llm') ? undefined : true), 'idle-llm to be unloaded', 60_000)

  before(async () => {
    directory = await temporaryDirectory()
    service = await startService()
    const bin = join(directory, 'bin')
    await mkdir(bin)
    await writeFile(join(bin, 'servicectl'), `#!/bin/sh\nexec node ${join(ROOT, 'bin/servicectl.js')} "$@"\n`)
    await chmod(join(bin, 'servicectl'), 0o755)
    env = {PATH: `${bin}:${process.env.PATH}`, SERVICE_ENDPOINT: service.url}
  })

  after(async () => service?.stop())

  it("launches with a keep-alive, comes back for Ollama's API, unloads with keep_alive 0, and answers 503 to a client that will not wait", async () => {
    const launched = await execa('bash', ['-euo', 'pipefail', '-c', await readmeBlock('on-demand-launch', page)], {cwd: directory, env, reject: false})
    expect(launched.exitCode, launched.stderr).to.equal(0)
    expect(launched.stdout).to.contain('Model uid: idle-llm')
    await unloaded()

    const example = (await readmeBlock('on-demand-ollama', page)).replaceAll('http://127.0.0.1:9997', service.url)
    const ollama = await execa('node', ['--input-type=module', '-e', example], {cwd: ROOT, reject: false})
    expect(ollama.exitCode, ollama.stderr).to.equal(0)
    expect(ollama.stdout).to.equal("assistant\n[ 'idle-llm' ]")
    await unloaded()

    const curl = await execa('bash', ['-euo', 'pipefail', '-c', (await readmeBlock('on-demand-async', page)).replaceAll('http://127.0.0.1:9997', service.url)], {cwd: directory, env, reject: false})
    expect(curl.exitCode, curl.stderr).to.equal(0)
    expect(curl.stdout).to.match(/^HTTP\/1.1 503 Service Unavailable\r\n/)
    expect(curl.stdout).to.match(/\r\nretry-after: 5\r\n/i)
    expect(curl.stdout).to.contain('"code":"model_loading"')
    await until(async () => ((await running()).includes('idle-llm') ? true : undefined), 'idle-llm to be launched by the refused request', 60_000)
  })
})
