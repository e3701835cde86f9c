/**
 * `GET /metrics` on a real `service-local` with access control on: real traffic through the official openai client
 * (streamed, not streamed, refused) and real downloads from a local hub, then a scrape parsed by a Prometheus text
 * parser, whose counts must be what was sent: requests by status, the tokens the API's usage reported, histogram
 * counts, the download's bytes, and this machine's memory as the worker's. Anonymous scrapes are refused.
 */
import {expect} from 'chai'
import {readFile} from 'node:fs/promises'
import {availableParallelism, totalmem} from 'node:os'
import {join} from 'node:path'
import OpenAI from 'openai'

import {writeRandomLlamaGguf} from '../../plugins/engine-llama-cpp/src/gguf/random-llama.js'
import {apiKeyOf, writeTestAuthConfig} from '../helpers/auth.js'
import {FakeHub} from '../helpers/fake-hub.js'
import {type Families, sampleValue, scrapeMetrics} from '../helpers/prometheus.js'
import {callApi, ROOT, type RunningService, startService, temporaryDirectory, until} from '../helpers/service.js'

const REPO = 'test-org/metrics-GGUF'
const ADMIN = apiKeyOf('root')
const SCRAPER = apiKeyOf('only-metrics:read')

const family = {
  context_length: 2048,
  model_ability: ['chat', 'generate'],
  model_lang: ['en'],
  model_name: 'hub-metrics',
  model_specs: [{model_format: 'ggufv2', model_size_in_billions: '0_5', model_src: {huggingface: {model_file_name_template: 'tiny-{quantization}.gguf', model_id: REPO, quantizations: ['q4_0', 'q8_0']}}}],
  version: 2,
}

describe('metrics (service-local --auth-config, openai client, Prometheus text parser)', function () {
  let service: RunningService
  let hub: FakeHub
  let client: OpenAI
  let downloadedBytes: number
  const usage = {completion: 0, prompt: 0}
  const api = (method: string, path: string, body?: unknown, key = ADMIN) => callApi(service, method, path, body, {authorization: `Bearer ${key}`})

  const scrape = (key = SCRAPER) => scrapeMetrics(service.url, {authorization: `Bearer ${key}`})

  before(async () => {
    const directory = await temporaryDirectory()
    const tiny = join(directory, 'tiny.gguf')
    downloadedBytes = (await writeRandomLlamaGguf(tiny)).bytes
    hub = await FakeHub.start()
    await hub.addRepo(REPO, {'tiny-q4_0.gguf': tiny, 'tiny-q8_0.gguf': tiny})
    hub.corruptFile('tiny-q8_0.gguf')
    service = await startService({args: ['--auth-config', await writeTestAuthConfig(directory)], env: {HF_ENDPOINT: hub.url}})
    client = new OpenAI({apiKey: ADMIN, baseURL: `${service.url}/v1`, maxRetries: 0})
    expect((await api('POST', '/v1/model_registrations/LLM', {model: family, persist: false})).status).to.equal(200)
    const launched = await api('POST', '/v1/models', {model_engine: 'llama.cpp', model_name: 'hub-metrics', model_uid: 'tiny', n_threads: 1, quantization: 'q4_0'})
    expect(launched.status, JSON.stringify(launched.body)).to.equal(200)
  })

  after(async () => {
    await service?.stop()
    await hub?.stop()
  })

  it('is listed in the API reference with its permission, and refuses anonymous and unentitled callers', async () => {
    const document = (await callApi(service, 'GET', '/openapi.json')).body
    expect(document.paths['/metrics'].get['x-permission']).to.equal('metrics:read')
    const anonymous = await fetch(`${service.url}/metrics`)
    expect(anonymous.status).to.equal(401)
    expect(anonymous.headers.get('www-authenticate')).to.match(/^Bearer/)
    expect((await fetch(`${service.url}/metrics`, {headers: {authorization: `Bearer ${apiKeyOf('only-models:read')}`}})).status).to.equal(403)
    expect((await fetch(`${service.url}/metrics`, {headers: {authorization: `Bearer ${ADMIN}`}})).status).to.equal(200)
  })

  it('counts requests by route and status, and the tokens the API reported, after real traffic', async () => {
    for (const max_tokens of [3, 5]) {
      const reply = await client.chat.completions.create({max_tokens, messages: [{content: 'Hello!', role: 'user'}], model: 'tiny'})
      usage.prompt += reply.usage!.prompt_tokens
      usage.completion += reply.usage!.completion_tokens
    }

    const stream = await client.chat.completions.create({max_tokens: 4, messages: [{content: 'Hi', role: 'user'}], model: 'tiny', stream: true, stream_options: {include_usage: true}})
    for await (const chunk of stream) {
      usage.prompt += chunk.usage?.prompt_tokens ?? 0
      usage.completion += chunk.usage?.completion_tokens ?? 0
    }

    const completion = await client.completions.create({max_tokens: 2, model: 'tiny', prompt: 'Once upon a time'})
    usage.prompt += completion.usage!.prompt_tokens
    usage.completion += completion.usage!.completion_tokens

    await expectRefused(() => client.chat.completions.create({messages: [{content: 'Hi', role: 'user'}], model: 'nobody'}), 404)
    await expectRefused(() => client.chat.completions.create({messages: [], model: 'tiny'}), 400)
    // Paths no route takes (a scanner's) are counted under one label, not one label each.
    for (const path of ['/wp-login.php', '/.env', '/v1/nothing/here']) expect((await fetch(`${service.url}${path}`, {headers: {authorization: `Bearer ${ADMIN}`}})).status).to.equal(404)

    // A request is counted when its response closes, which may come just after the client has read it.
    const answered = (families: Families) => families.get('service_requests_total')!.metrics.filter((sample) => sample.labels?.route.startsWith('/v1/') && sample.labels.route.endsWith('completions')).reduce((sum, sample) => sum + Number(sample.value), 0)
    const families = await until(async () => {
      const scraped = await scrape()
      return answered(scraped) === 6 ? scraped : undefined
    }, 'the six requests to be counted')
    const chat = {method: 'POST', route: '/v1/chat/completions'}
    expect(sampleValue(families, 'service_requests_total', {...chat, model_name: 'tiny', status: '200'})).to.equal(3)
    expect(sampleValue(families, 'service_requests_total', {...chat, model_name: '', status: '404'})).to.equal(1)
    expect(sampleValue(families, 'service_requests_total', {...chat, model_name: '', status: '400'})).to.equal(1)
    expect(sampleValue(families, 'service_requests_total', {method: 'POST', model_name: 'tiny', route: '/v1/completions', status: '200'})).to.equal(1)
    expect(sampleValue(families, 'service_request_duration_seconds_count', {...chat, model_name: 'tiny'})).to.equal(3)
    expect(sampleValue(families, 'service_requests_total', {method: 'GET', model_name: '', route: 'unmatched', status: '404'})).to.equal(3)
    expect(families.get('service_requests_total')!.metrics.filter((sample) => sample.labels?.route.includes('wp-login'))).to.deep.equal([])

    const model = {model_name: 'tiny'}
    expect(sampleValue(families, 'vllm:prompt_tokens_total', model)).to.equal(usage.prompt)
    expect(sampleValue(families, 'vllm:generation_tokens_total', model)).to.equal(usage.completion)
    expect(sampleValue(families, 'vllm:request_success_total', model)).to.equal(4)
    expect(sampleValue(families, 'vllm:e2e_request_latency_seconds_count', model)).to.equal(4)
    expect(sampleValue(families, 'vllm:e2e_request_latency_seconds_bucket', {...model, le: '+Inf'})).to.equal(4)
    expect(sampleValue(families, 'vllm:time_to_first_token_seconds_count', model)).to.equal(4)
    expect(sampleValue(families, 'vllm:time_per_output_token_seconds_count', model)).to.equal(4)
    expect(sampleValue(families, 'vllm:num_requests_running', model)).to.equal(0)
    expect(families.get('vllm:e2e_request_latency_seconds')!.type).to.equal('HISTOGRAM')
    expect(families.get('vllm:prompt_tokens_total')!.type).to.equal('COUNTER')
  })

  it("reports the worker's resources, the models by state and the process", async () => {
    const families = await scrape()
    expect(sampleValue(families, 'service_worker_up', {worker: 'local'})).to.equal(1)
    expect(sampleValue(families, 'service_worker_memory_total_bytes', {worker: 'local'})).to.equal(totalmem())
    expect(sampleValue(families, 'service_worker_cpu_count', {worker: 'local'})).to.equal(availableParallelism())
    expect(sampleValue(families, 'service_models', {state: 'ready'})).to.equal(1)
    expect(sampleValue(families, 'process_cpu_user_seconds_total')).to.be.greaterThan(0)
    expect(sampleValue(families, 'nodejs_heap_size_used_bytes')).to.be.greaterThan(0)
  })

  it('counts downloads by outcome and the bytes fetched', async () => {
    const failed = await api('POST', '/v1/models', {model_engine: 'llama.cpp', model_name: 'hub-metrics', model_uid: 'corrupt', n_threads: 1, quantization: 'q8_0'})
    expect(failed.status, JSON.stringify(failed.body)).to.be.within(400, 599)
    const families = await scrape()
    expect(sampleValue(families, 'service_downloads_total', {hub: 'huggingface', outcome: 'completed'})).to.equal(1)
    expect(sampleValue(families, 'service_downloads_total', {hub: 'huggingface', outcome: 'failed'})).to.equal(1)
    expect(sampleValue(families, 'service_download_bytes_total', {hub: 'huggingface'})).to.be.at.least(downloadedBytes)
    expect(sampleValue(families, 'service_model_failures_total', {model_name: 'corrupt'})).to.equal(1)
  })

  it('serves every series the Grafana dashboard in the repository queries', async () => {
    const dashboard = await readFile(join(ROOT, 'deploy/grafana/service-dashboard.json'), 'utf8')
    const queried = new Set(dashboard.match(/\b(?:vllm:|service_|process_|nodejs_)[a-z0-9_:]+/g))
    expect(queried.size).to.be.greaterThan(10)
    const families = await scrape()
    expect([...queried].filter((name) => !families.has(name))).to.deep.equal([])
  })
})

async function expectRefused(call: () => Promise<unknown>, status: number): Promise<void> {
  try {
    await call()
  } catch (error) {
    expect((error as {status?: number}).status).to.equal(status)
    return
  }

  expect.fail(`expected a ${status}`)
}
