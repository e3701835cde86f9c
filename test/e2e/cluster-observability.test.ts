/**
 * A cluster of real processes, a supervisor on 127.0.0.1 and a worker on 127.0.0.2 downloading from a local fake hub:
 * the supervisor's metrics carry what the worker measured (its downloads, its process, each model process, the
 * engine's sequences), labelled by worker; and its desired models after a restart: re-adopted, same processes and
 * replicas, from a worker that kept running, and relaunched with their replicas when the worker restarted too.
 */
import {expect} from 'chai'
import {readFile} from 'node:fs/promises'
import {join} from 'node:path'
import OpenAI from 'openai'

import {writeRandomLlamaGguf} from '../../plugins/engine-llama-cpp/src/gguf/random-llama.js'
import {FakeHub} from '../helpers/fake-hub.js'
import {type Families, sampleValue, scrapeMetrics} from '../helpers/prometheus.js'
import {callApi, type RunningService, startProgram, temporaryDirectory, until} from '../helpers/service.js'

const FAST = {SERVICE_HEARTBEAT_INTERVAL: '0.2', SERVICE_WORKER_LOST_TIMEOUT: '1.5'}
const REPO = 'test-org/cluster-GGUF'
const family = {
  context_length: 2048,
  model_ability: ['chat', 'generate'],
  model_lang: ['en'],
  model_name: 'hub-cluster',
  model_specs: [{model_format: 'ggufv2', model_size_in_billions: '0_5', model_src: {huggingface: {model_file_name_template: 'tiny-{quantization}.gguf', model_id: REPO, quantizations: ['q4_0']}}}],
  version: 2,
}
const LAUNCH = {model_engine: 'llama.cpp', model_name: 'hub-cluster', n_ctx: 256, n_parallel: 2, n_threads: 1, quantization: 'q4_0'}

interface Described {
  id: string
  status: string
  replica: number
  replicas: Array<{model_uid: string; pid: number; worker: string}>
}

describe('cluster observability (supervisor and worker as real processes, fake hub)', function () {
  this.timeout(180_000)
  let hub: FakeHub
  let supervisor: RunningService
  let worker: RunningService
  let supervisorHome: string
  let workerHome: string
  let port: number
  let downloadedBytes: number

  const startSupervisor = async () => startProgram('service-supervisor', ['-H', '127.0.0.1', '-p', String(port)], {env: FAST, home: supervisorHome})
  const startWorker = async () => startProgram('service-worker', ['-e', supervisor.url, '-H', '127.0.0.2'], {env: {...FAST, HF_ENDPOINT: hub.url}, home: workerHome})
  const api = (method: string, path: string, body?: unknown) => callApi(supervisor, method, path, body)
  const described = async () => ((await api('GET', '/v1/models')).body.data as Described[]).sort((a, b) => a.id.localeCompare(b.id))
  const pids = (models: Described[]) => models.flatMap((model) => model.replicas.map((replica) => `${replica.model_uid}:${replica.pid}`)).sort()
  const chat = async (model: string) =>
    new OpenAI({apiKey: 'x', baseURL: `${supervisor.url}/v1`, maxRetries: 0}).chat.completions.create({max_tokens: 3, messages: [{content: 'Hi', role: 'user'}], model})
  /** Both models ready with every replica they asked for. */
  const bothReady = async () => {
    const models = await described()
    return models.length === 2 && models.every((model) => model.status === 'ready' && model.replicas.length === model.replica) ? models : undefined
  }

  before(async () => {
    const directory = await temporaryDirectory()
    const gguf = join(directory, 'tiny.gguf')
    downloadedBytes = (await writeRandomLlamaGguf(gguf)).bytes
    hub = await FakeHub.start()
    await hub.addRepo(REPO, {'tiny-q4_0.gguf': gguf})
    supervisorHome = await temporaryDirectory()
    workerHome = await temporaryDirectory()
    supervisor = await startProgram('service-supervisor', ['-H', '127.0.0.1', '-p', '0'], {env: FAST, home: supervisorHome})
    port = Number(new URL(supervisor.url).port)
    worker = await startWorker()
    expect((await api('POST', '/v1/model_registrations/LLM', {model: family, persist: true})).status).to.equal(200)
    for (const launch of [{...LAUNCH, model_uid: 'single'}, {...LAUNCH, model_uid: 'pair', replica: 2}]) {
      const launched = await api('POST', '/v1/models', launch)
      expect(launched.status, JSON.stringify(launched.body)).to.equal(200)
    }
  })

  after(async () => {
    for (const service of [worker, supervisor]) await service?.stop()
    await hub?.stop()
  })

  it("serves the worker's downloads, process, model processes and engine sequences, labelled by worker", async () => {
    expect((await chat('single')).choices[0].message.role).to.equal('assistant')
    const workerId = (await api('GET', '/v1/cluster/workers')).body.list[0].id as string
    const families = await until(async () => {
      const scraped = await scrapeMetrics(supervisor.url)
      // The series appear with the first heartbeat that carries the engines' reports.
      const reported = scraped.get('service_model_sequences_total')?.metrics.some((sample) => sample.labels?.model_name === 'pair')
      return reported && sampleValue(scraped, 'service_model_sequences_total', {model_name: 'pair'}) === 4 ? scraped : undefined
    }, "the worker's heartbeat to carry the engines' sequences")
    const at = {worker: workerId}
    expect(sampleValue(families, 'service_worker_downloads_total', {...at, hub: 'huggingface', outcome: 'completed'})).to.equal(1)
    expect(sampleValue(families, 'service_worker_download_bytes_total', {...at, hub: 'huggingface'})).to.equal(downloadedBytes)
    expect(sampleValue(families, 'service_worker_process_resident_memory_bytes', at)).to.be.greaterThan(10_000_000)
    expect(sampleValue(families, 'service_worker_process_cpu_seconds_total', at)).to.be.greaterThan(0)
    expect(sampleValue(families, 'service_model_sequences_total', {model_name: 'single'})).to.equal(2)
    expect(sampleValue(families, 'service_model_sequences_in_use', {model_name: 'single'})).to.equal(0)
    expect(sampleValue(families, 'vllm:num_requests_waiting', {model_name: 'single'})).to.equal(0)
    for (const instance of ['single', 'pair-rep0', 'pair-rep1']) {
      const model = instance.startsWith('pair') ? 'pair' : 'single'
      expect(sampleValue(families, 'service_model_process_resident_memory_bytes', {...at, instance, model_name: model}), instance).to.be.greaterThan(1_000_000)
      expect(sampleValue(families, 'service_model_process_cpu_seconds_total', {...at, instance, model_name: model}), instance).to.be.greaterThan(0)
    }
  })

  it('re-adopts the models of a worker that kept running after a supervisor restart: same processes, all replicas, none relaunched', async () => {
    const before = pids((await bothReady())!)
    expect(before).to.have.length(3)
    await supervisor.stop()
    supervisor = await startSupervisor()
    const back = await until(bothReady, 'the worker to bring both models back')
    expect(pids(back)).to.deep.equal(before)
    const log = () => readFile(join(supervisorHome, 'logs', 'service-supervisor.log'), 'utf8')
    await until(async () => ((await log()).split('re-adopted, not relaunched').length === 3 ? true : undefined), 'the supervisor to find both desired models re-adopted')
    expect(await log()).not.to.contain('relaunching desired model')
    expect(pids(await described()), 'nothing runs twice').to.deep.equal(before)
    expect((await chat('pair')).choices[0].message.role).to.equal('assistant')
  })

  it('relaunches the desired models with their replicas when the worker restarted too, from its cache', async () => {
    const before = pids((await bothReady())!)
    await worker.stop()
    await supervisor.stop()
    await hub.stop()
    supervisor = await startSupervisor()
    worker = await startWorker()
    const back = await until(bothReady, 'the supervisor to relaunch both models', 150_000)
    expect(back.map((model) => [model.id, model.replicas.length])).to.deep.equal([
      ['pair', 2],
      ['single', 1],
    ])
    expect(pids(back)).not.to.include.members(before)
    expect((await chat('pair')).choices[0].message.role).to.equal('assistant')
    expect((await chat('single')).choices[0].message.role).to.equal('assistant')
  })
})
