/**
 * A cluster of real processes on distinct loopback addresses: a supervisor on 127.0.0.1 and two workers on
 * 127.0.0.2 and 127.0.0.3, each with its own SERVICE_HOME. Failure detection runs fast (heartbeats every
 * 0.2 s, lost after 1.5 s) so the test polls for outcomes instead of waiting on timings.
 */
import {expect} from 'chai'
import {existsSync} from 'node:fs'
import {readdir, readFile} from 'node:fs/promises'
import {totalmem} from 'node:os'
import {join} from 'node:path'
import OpenAI from 'openai'

import {apiKeyOf, writeTestAuthConfig} from '../helpers/auth.js'
import {writeTinyChatModel} from '../helpers/models.js'
import {sampleValue, scrapeMetrics} from '../helpers/prometheus.js'
import {callApi, type RunningService, servicectl, startProgram, temporaryDirectory, until} from '../helpers/service.js'

const FAST = {SERVICE_HEARTBEAT_INTERVAL: '0.2', SERVICE_WORKER_LOST_TIMEOUT: '1.5'}
const LAUNCH = {model_engine: 'llama.cpp', model_format: 'ggufv2', model_name: 'tiny-chat', model_size_in_billions: '0_5', n_ctx: 512, n_threads: 1, quantization: 'q4_0'}

describe('cluster (supervisor and two workers as real processes)', function () {
  this.timeout(120_000)
  let supervisor: RunningService
  let supervisorHome: string
  let port: number
  const workers: RunningService[] = []
  let family: Record<string, unknown>

  const startSupervisor = async (args: string[] = ['-p', '0'], env: Record<string, string> = {}) =>
    startProgram('service-supervisor', ['-H', '127.0.0.1', ...args], {env: {...FAST, ...env}, home: supervisorHome})
  const startWorker = (host: string, env: Record<string, string> = {}) => startProgram('service-worker', ['-e', supervisor.url, '-H', host], {env})
  const models = async () => (await callApi(supervisor, 'GET', '/v1/models')).body.data as Array<Record<string, any>>

  before(async () => {
    ;({family} = await writeTinyChatModel(await temporaryDirectory()))
    supervisorHome = await temporaryDirectory()
    supervisor = await startSupervisor()
    port = Number(new URL(supervisor.url).port)
    workers.push(await startWorker('127.0.0.2'), await startWorker('127.0.0.3'))
    expect((await callApi(supervisor, 'POST', '/v1/model_registrations/LLM', {model: family})).status).to.equal(200)
  })

  after(async () => {
    for (const service of [...workers, supervisor]) if (service) await service.stop()
  })

  it('lists both workers with their resources', async () => {
    const {body} = await callApi(supervisor, 'GET', '/v1/cluster/workers')
    expect(body.list.map((w: any) => w.address).sort()).to.deep.equal(workers.map((w) => w.url).sort())
    expect(body.list[0].resources.cpu_count).to.be.greaterThan(0)
    const info = await callApi(supervisor, 'GET', '/v1/cluster/info')
    expect(info.body).to.include({mode: 'cluster'})
    expect(info.body.workers).to.deep.equal({lost: 0, ready: 2})
  })

  it('tells in the engine table what the workers can run, and why not worker by worker', async function () {
    // vLLM's CUDA build has other kernels: the CPU build's limits are the subject.
    if (existsSync('/proc/driver/nvidia/version')) this.skip()
    const ids = ((await callApi(supervisor, 'GET', '/v1/cluster/workers')).body.list as Array<{id: string}>).map((worker) => worker.id)
    const {body} = await callApi(supervisor, 'GET', '/v1/engines/tiny-random-llm')
    for (const group of body['llama.cpp']) expect(group).to.include({available: true})
    const [vllm] = body.vllm
    expect(vllm).to.include({available: false})
    for (const id of ids) expect(vllm.reason).to.contain(`worker ${id}: vLLM's CPU build cannot run tiny-random-llm's pytorch spec`)
    for (const id of ids) expect(body.sglang).to.contain(`worker ${id}: SGLang needs Linux with an NVIDIA GPU`)
    const launched = await callApi(supervisor, 'POST', '/v1/models', {model_engine: 'vllm', model_format: 'pytorch', model_name: 'tiny-random-llm', model_uid: 'nowhere'})
    expect(launched.status).to.equal(400)
    expect(launched.body.error).to.include({message: `vllm cannot run tiny-random-llm's pytorch spec here: ${vllm.reason}`, param: 'model_engine'})
  })

  it('launches on a worker (or the one worker_ip names) and streams chat through the supervisor', async () => {
    const host = new URL(workers[1].url).hostname
    const launched = await callApi(supervisor, 'POST', '/v1/models', {...LAUNCH, model_uid: 'solo', worker_ip: host})
    expect(launched).to.deep.equal({body: {model_uid: 'solo'}, status: 200})
    const [model] = await models()
    expect(model).to.include({id: 'solo', status: 'ready', worker: workers[1].url.replace('http://', '')})

    const client = new OpenAI({apiKey: 'x', baseURL: `${supervisor.url}/v1`})
    const stream = await client.chat.completions.create({max_tokens: 8, messages: [{content: 'Hi', role: 'user'}], model: 'solo', stream: true})
    const chunks = []
    for await (const chunk of stream) chunks.push(chunk)
    expect(chunks.at(-1)!.choices[0].finish_reason).to.be.oneOf(['length', 'stop'])

    const listed = await servicectl(['list'], {env: {SERVICE_ENDPOINT: supervisor.url}})
    expect(listed.stdout).to.match(new RegExp(`solo\\s+LLM.*ready\\s+${model.worker}`))

    const nowhere = await callApi(supervisor, 'POST', '/v1/models', {...LAUNCH, model_uid: 'x', worker_ip: '127.0.0.9'})
    expect(nowhere.status).to.equal(400)
    expect(nowhere.body.error.message).to.contain('worker_ip 127.0.0.9 names no worker')
  })

  it("serves the supervisor's metrics with every worker's resources, labelled by worker, and the chat it routed", async () => {
    const {body} = await callApi(supervisor, 'GET', '/v1/cluster/workers')
    const families = await scrapeMetrics(supervisor.url)
    for (const worker of body.list) {
      expect(sampleValue(families, 'service_worker_up', {worker: worker.id})).to.equal(1)
      expect(sampleValue(families, 'service_worker_memory_total_bytes', {worker: worker.id})).to.equal(totalmem())
      expect(sampleValue(families, 'service_worker_cpu_count', {worker: worker.id})).to.equal(worker.resources.cpu_count)
    }
    expect(families.get('service_worker_up')!.metrics).to.have.length(2)
    expect(sampleValue(families, 'service_requests_total', {method: 'POST', model_name: 'solo', route: '/v1/chat/completions', status: '200'})).to.equal(1)
    expect(sampleValue(families, 'vllm:time_to_first_token_seconds_count', {model_name: 'solo'})).to.equal(1)
  })

  it('passes a client disconnect through the supervisor to the model process on the worker', async () => {
    const logs = join(workers[1].home, 'logs/models')
    const logOf = async () => {
      const [file] = (await readdir(logs)).filter((name) => name.startsWith('solo'))
      return readFile(join(logs, file), 'utf8')
    }

    const aborted = async () => (await logOf()).split('\n').filter((line) => line.includes('request finished: abort'))
    const before = (await aborted()).length
    const controller = new AbortController()
    const client = new OpenAI({apiKey: 'x', baseURL: `${supervisor.url}/v1`, maxRetries: 0})
    const stream = await client.chat.completions.create(
      {max_tokens: 900, messages: [{content: 'Go on forever.', role: 'user'}], model: 'solo', stream: true},
      {signal: controller.signal},
    )
    try {
      for await (const chunk of stream) if (chunk.choices[0]?.delta.content) controller.abort()
    } catch (error) {
      expect((error as Error).name).to.match(/Abort/)
    }

    const line = await until(async () => {
      const lines = await aborted()
      return lines.length > before ? lines.at(-1) : undefined
    }, 'the worker\'s model to log the aborted request')
    expect(Number(/\+ (\d+) generated/.exec(line)![1])).to.be.lessThan(900)
  })

  it('shows a model process that crashed on a worker on the model, and answers its requests with why', async () => {
    const host = new URL(workers[0].url).hostname
    expect((await callApi(supervisor, 'POST', '/v1/models', {...LAUNCH, model_uid: 'fragile', worker_ip: host})).status).to.equal(200)
    const {pid} = (await callApi(supervisor, 'GET', '/v1/models/fragile')).body
    process.kill(pid, 'SIGKILL')
    const described = await until(async () => {
      const {body} = await callApi(supervisor, 'GET', '/v1/models/fragile')
      return body.status === 'error' ? body : undefined
    }, 'the supervisor to see the crash')
    expect(described.error).to.contain('killed by SIGKILL')
    const answer = await callApi(supervisor, 'POST', '/v1/chat/completions', {messages: [{content: 'Hi', role: 'user'}], model: 'fragile'})
    expect(answer.status).to.equal(503)
    expect(answer.body.error.message).to.match(/killed by SIGKILL.*terminate it and launch it again/)
    expect((await callApi(supervisor, 'DELETE', '/v1/models/fragile')).status).to.equal(200)
  })

  it('spreads replica: 2 over both workers and balances requests among them', async () => {
    await callApi(supervisor, 'POST', '/v1/models', {...LAUNCH, model_uid: 'twin', replica: 2})
    const twin = (await models()).find((m) => m.id === 'twin')!
    expect(twin.replica).to.equal(2)
    expect(new Set(twin.replicas.map((r: any) => r.worker))).to.have.property('size', 2)
    for (let i = 0; i < 2; i++) {
      const reply = await callApi(supervisor, 'POST', '/v1/chat/completions', {max_tokens: 4, messages: [{content: 'Hi', role: 'user'}], model: 'twin'})
      expect(reply.status).to.equal(200)
    }
  })

  it('marks a killed worker lost: its models leave the list and fail fast with a 503, replicas elsewhere keep serving', async () => {
    workers[1].process.kill('SIGKILL')
    await workers[1].process
    await until(async () => ((await models()).some((m) => m.id === 'solo') ? undefined : true), 'solo to leave the list')
    const lost = await callApi(supervisor, 'POST', '/v1/chat/completions', {max_tokens: 4, messages: [{content: 'Hi', role: 'user'}], model: 'solo'})
    expect(lost.status).to.equal(503)
    expect(lost.body.error.message).to.match(/worker 127\.0\.0\.3:\d+ stopped answering/)
    const twin = (await models()).find((m) => m.id === 'twin')!
    expect(twin.replicas).to.have.length(1)
    for (let i = 0; i < 2; i++)
      expect((await callApi(supervisor, 'POST', '/v1/chat/completions', {max_tokens: 4, messages: [{content: 'Hi', role: 'user'}], model: 'twin'})).status).to.equal(200)
    const {body} = await callApi(supervisor, 'GET', '/v1/cluster/workers')
    expect(body.list.find((w: any) => w.address === workers[1].url).state).to.equal('lost')
  })

  it('relaunches what a killed worker ran when it is started again on its host, even on another port', async () => {
    const {body: away} = await callApi(supervisor, 'GET', '/v1/models/solo')
    expect(away.error.message).to.match(/its models come back when it does, relaunched there if it restarted\.$/)
    workers[1] = await startWorker('127.0.0.3')
    const back = await until(async () => {
      const list = await models()
      const solo = list.find((m) => m.id === 'solo')
      const twin = list.find((m) => m.id === 'twin')
      return solo?.status === 'ready' && twin?.replicas.length === 2 ? {solo, twin} : undefined
    }, 'solo and both replicas of twin to be relaunched on the restarted worker')
    const host = workers[1].url.replace('http://', '')
    expect(back.solo.worker).to.equal(host)
    expect(back.twin.replicas.map((r: any) => r.worker)).to.include(host)
    for (const model of ['solo', 'twin', 'twin'])
      expect((await callApi(supervisor, 'POST', '/v1/chat/completions', {max_tokens: 4, messages: [{content: 'Hi', role: 'user'}], model})).status, model).to.equal(200)
    expect(await readFile(join(supervisorHome, 'logs', 'service-supervisor.log'), 'utf8')).to.contain(`worker ${host} joined without solo of model solo, which ran on its host before: relaunching it there`)
  })

  it('loses nothing when the supervisor restarts: the worker registers again with its models', async () => {
    await supervisor.stop()
    supervisor = await startSupervisor(['-p', String(port)])
    // Each worker registers again on its own heartbeat, so twin comes back one replica at a time.
    const twin = await until(async () => {
      const found = (await models()).find((m) => m.id === 'twin')
      return found?.replicas.length === 2 ? found : undefined
    }, 'twin to come back with both replicas')
    expect(twin.status).to.equal('ready')
    expect(twin.worker.split(', ')).to.include(workers[0].url.replace('http://', ''))
    const reply = await callApi(supervisor, 'POST', '/v1/chat/completions', {max_tokens: 4, messages: [{content: 'Hi', role: 'user'}], model: 'twin'})
    expect(reply.status).to.equal(200)
  })

  it('stop-cluster ends the workers, their models and the supervisor', async () => {
    const stopped = await servicectl(['stop-cluster', '-e', supervisor.url, '--check'])
    expect(stopped.stdout).to.contain(`Stopped the cluster at ${supervisor.url}.`)
    const exits = await Promise.all([supervisor.process, workers[0].process])
    expect(exits.map((exit) => exit.exitCode)).to.deep.equal([0, 0])
  })
})

describe('cluster with access control', function () {
  this.timeout(60_000)

  it('refuses a worker without the cluster token, and worker routes to anyone without it', async () => {
    const supervisor = await startProgram('service-supervisor', ['-H', '127.0.0.1', '-p', '0', '--auth-config', await writeTestAuthConfig(await temporaryDirectory()), '--cluster-token', 'sesame'], {env: FAST})
    try {
      const refused = await startProgram('service-worker', ['-e', supervisor.url, '-H', '127.0.0.2']).catch((error: Error) => error)
      expect(String(refused)).to.contain('has access control on: give this worker its cluster token')
      const wrong = await startProgram('service-worker', ['-e', supervisor.url, '-H', '127.0.0.2', '--cluster-token', 'nope']).catch((error: Error) => error)
      expect(String(wrong)).to.contain('refused this worker')

      const worker = await startProgram('service-worker', ['-e', supervisor.url, '-H', '127.0.0.2'], {env: {SERVICE_CLUSTER_TOKEN: 'sesame'}})
      try {
        const admin = {authorization: `Bearer ${apiKeyOf('root')}`}
        expect((await callApi(supervisor, 'POST', '/v1/cluster/workers', {address: 'http://127.0.0.9:1', instances: [], resources: {}, version: '0'}, admin)).status).to.equal(401)
        expect((await callApi(worker, 'GET', '/v1/worker/instances', undefined, admin)).status).to.equal(401)
        expect((await callApi(worker, 'GET', '/v1/worker/instances', undefined, {authorization: 'Bearer sesame'})).status).to.equal(200)
        const {body} = await callApi(supervisor, 'GET', '/v1/cluster/workers', undefined, admin)
        expect(body.list.map((w: any) => w.address)).to.deep.equal([worker.url])
      } finally {
        await worker.stop()
      }
    } finally {
      await supervisor.stop()
    }
  })
})
