/**
 * The metrics kept from the observability seam, fed events as the HTTP app, the supervisor and the weight store
 * report them: requests running on a model between their start and their end, models by state, and every worker's
 * resources labelled by worker, as a cluster's supervisor knows them from heartbeats.
 */
import {expect} from 'chai'

import type {ReportedInstance, WorkerStatus} from '../../src/protocol/worker.js'

import {ServiceEvents} from '../../src/kernel/observability.js'
import {ServiceMetrics} from '../../src/server/metrics.js'

const gpu = (index: number, free: number) => ({index, memory_free_bytes: free, memory_total_bytes: 24e9, name: 'NVIDIA L4', uuid: `GPU-${index}`})

function worker(id: string, state: WorkerStatus['state'], gpus: WorkerStatus['resources']['gpus']): WorkerStatus {
  return {address: `10.0.0.${id.length}:30001`, id, last_seen: 0, resources: {cpu_count: 8, gpus, memory_free_bytes: 3e9, memory_total_bytes: 16e9}, state, version: '0.1.0'}
}

describe('service metrics (from the observability seam)', () => {
  let events: ServiceEvents
  let workers: WorkerStatus[]
  let metrics: ServiceMetrics

  beforeEach(() => {
    events = new ServiceEvents()
    workers = []
    metrics = new ServiceMetrics({events, workers: () => workers})
  })

  afterEach(() => metrics.dispose())

  async function samples(name: string) {
    const metric = (await metrics.registry.getMetricsAsJSON()).find((candidate) => candidate.name === name)
    expect(metric, name).to.not.equal(undefined)
    return metric!.values.map(({labels, value}) => ({labels, value}))
  }

  it('counts a request as running on its model from its start to its end', async () => {
    events.report('requestStarted', {method: 'POST', modelUid: 'qwen', route: '/v1/chat/completions'})
    events.report('requestStarted', {method: 'POST', modelUid: 'qwen', route: '/v1/chat/completions'})
    expect(await samples('vllm:num_requests_running')).to.deep.equal([{labels: {model_name: 'qwen'}, value: 2}])
    const finished = {completed: true, durationMs: 40, method: 'POST', modelUid: 'qwen', path: '/v1/chat/completions', route: '/v1/chat/completions', streamed: false}
    events.report('request', {...finished, completionTokens: 5, promptTokens: 7, status: 200, ttftMs: 20})
    events.report('request', {...finished, completed: false, status: 200})
    expect(await samples('vllm:num_requests_running')).to.deep.equal([{labels: {model_name: 'qwen'}, value: 0}])
    expect(await samples('vllm:request_success_total')).to.deep.equal([{labels: {model_name: 'qwen'}, value: 1}])
    expect(await samples('service_requests_abandoned_total')).to.deep.equal([{labels: {model_name: 'qwen', route: '/v1/chat/completions'}, value: 1}])
    const perToken = (await samples('vllm:time_per_output_token_seconds')).find(({labels}) => labels.le === 0.005)
    expect(perToken?.value, 'the request spent 20 ms on 4 tokens after its first').to.equal(1)
  })

  it("drops a terminated model's series, and keeps the others'", async () => {
    const finished = {completed: true, durationMs: 40, method: 'POST', path: '/v1/chat/completions', route: '/v1/chat/completions', status: 200, streamed: false}
    for (const modelUid of ['qwen', 'llama']) {
      events.report('requestStarted', {method: 'POST', modelUid, route: '/v1/chat/completions'})
      events.report('request', {...finished, completionTokens: 5, modelUid, promptTokens: 7, ttftMs: 20})
      events.report('model', {modelName: modelUid, modelType: 'LLM', state: 'error', uid: modelUid})
    }

    events.report('model', {modelName: 'qwen', modelType: 'LLM', state: 'terminated', uid: 'qwen'})
    await new Promise((resolve) => setImmediate(resolve))
    for (const name of ['vllm:num_requests_running', 'vllm:request_success_total', 'vllm:prompt_tokens_total', 'vllm:e2e_request_latency_seconds', 'service_requests_total', 'service_request_duration_seconds', 'service_model_failures_total']) {
      const uids = new Set((await samples(name)).map(({labels}) => labels.model_name))
      expect([...uids], name).to.deep.equal(['llama'])
    }
  })

  it("counts a request waiting for one of its engine's sequences as waiting, not running, and the sequences in use", async () => {
    const reported: ReportedInstance[] = [
      {instance: 'qwen-rep0', model: 'qwen', usage: {requests_waiting: 2, sequences_in_use: 1, sequences_total: 1}, worker: 'a'},
      {instance: 'qwen-rep1', model: 'qwen', usage: {process: {cpu_seconds: 3, resident_memory_bytes: 5e8}, requests_waiting: 0, sequences_in_use: 1, sequences_total: 1}, worker: 'b'},
    ]
    const usage = new ServiceMetrics({events, instances: () => reported, workers: () => []})
    for (let request = 0; request < 4; request++) events.report('requestStarted', {method: 'POST', modelUid: 'qwen', route: '/v1/chat/completions'})
    const of = async (name: string) => (await usage.registry.getMetricsAsJSON()).find((metric) => metric.name === name)!.values.map(({labels, value}) => ({labels, value}))
    expect(await of('vllm:num_requests_running')).to.deep.equal([{labels: {model_name: 'qwen'}, value: 2}])
    expect(await of('vllm:num_requests_waiting')).to.deep.equal([{labels: {model_name: 'qwen'}, value: 2}])
    expect(await of('service_model_sequences_in_use')).to.deep.equal([{labels: {model_name: 'qwen'}, value: 2}])
    expect(await of('service_model_sequences_total')).to.deep.equal([{labels: {model_name: 'qwen'}, value: 2}])
    expect(await of('service_model_process_resident_memory_bytes')).to.deep.equal([{labels: {instance: 'qwen-rep1', model_name: 'qwen', worker: 'b'}, value: 5e8}])
    usage.dispose()
  })

  it('counts models by their last state, a terminated model not at all', async () => {
    const model = {modelName: 'qwen2.5-instruct', modelType: 'LLM'}
    events.report('model', {...model, state: 'launching', uid: 'a'})
    events.report('model', {...model, state: 'ready', uid: 'a'})
    events.report('model', {...model, state: 'launching', uid: 'b'})
    events.report('model', {...model, reason: 'out of memory', state: 'error', uid: 'b'})
    events.report('model', {...model, state: 'launching', uid: 'c'})
    events.report('model', {...model, state: 'terminated', uid: 'c'})
    expect(await samples('service_models')).to.deep.equal([
      {labels: {state: 'launching'}, value: 0},
      {labels: {state: 'ready'}, value: 1},
      {labels: {state: 'error'}, value: 1},
    ])
    expect(await samples('service_model_failures_total')).to.deep.equal([{labels: {model_name: 'b'}, value: 1}])
  })

  it('counts relaunches of crashed models, and shows a model relaunching by its state', async () => {
    const model = {modelName: 'qwen2.5-instruct', modelType: 'LLM'}
    events.report('model', {...model, state: 'ready', uid: 'a'})
    events.report('model', {...model, reason: 'killed by SIGKILL', state: 'error', uid: 'a'})
    events.report('model', {...model, reason: 'killed by SIGKILL', state: 'restarting', uid: 'a'})
    expect(await samples('service_model_restarts_total')).to.deep.equal([{labels: {model_name: 'a'}, value: 1}])
    expect((await samples('service_models')).find(({labels}) => labels.state === 'restarting')?.value).to.equal(1)
  })

  it("labels every worker's resources by worker, as they were last reported", async () => {
    workers = [worker('local', 'ready', []), worker('gpu-box', 'lost', [gpu(0, 1e9), gpu(1, 2e9)])]
    expect(await samples('service_worker_up')).to.deep.equal([
      {labels: {worker: 'local'}, value: 1},
      {labels: {worker: 'gpu-box'}, value: 0},
    ])
    expect(await samples('service_worker_memory_free_bytes')).to.deep.equal([
      {labels: {worker: 'local'}, value: 3e9},
      {labels: {worker: 'gpu-box'}, value: 3e9},
    ])
    expect(await samples('service_worker_gpu_memory_free_bytes')).to.deep.equal([
      {labels: {gpu: '0', gpu_name: 'NVIDIA L4', gpu_uuid: 'GPU-0', worker: 'gpu-box'}, value: 1e9},
      {labels: {gpu: '1', gpu_name: 'NVIDIA L4', gpu_uuid: 'GPU-1', worker: 'gpu-box'}, value: 2e9},
    ])
    workers = [worker('local', 'ready', [])]
    expect(await samples('service_worker_gpu_memory_free_bytes')).to.deep.equal([])
  })

  it('counts downloads by hub and outcome, with the bytes fetched', async () => {
    events.report('download', {bytes: 1000, durationMs: 2000, hub: 'huggingface', modelName: 'qwen', outcome: 'completed'})
    events.report('download', {bytes: 300, durationMs: 500, hub: 'modelscope', modelName: 'qwen', outcome: 'failed', reason: 'connection reset'})
    expect(await samples('service_download_bytes_total')).to.deep.equal([
      {labels: {hub: 'huggingface'}, value: 1000},
      {labels: {hub: 'modelscope'}, value: 300},
    ])
    expect(await samples('service_downloads_total')).to.deep.equal([
      {labels: {hub: 'huggingface', outcome: 'completed'}, value: 1},
      {labels: {hub: 'modelscope', outcome: 'failed'}, value: 1},
    ])
  })

  it('stops counting once disposed', async () => {
    metrics.dispose()
    events.report('requestStarted', {method: 'POST', modelUid: 'qwen', route: '/v1/chat/completions'})
    expect(await samples('vllm:num_requests_running')).to.deep.equal([])
  })
})
