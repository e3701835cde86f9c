/**
 * The service's Prometheus metrics, kept with prom-client and fed only by the observability seam
 * (kernel/observability.ts): no route counts anything itself. Series that mean what vLLM's mean carry vLLM's
 * names and its `model_name` label (the model's uid, what clients send as `model`), so dashboards made for vLLM
 * work; the rest are the service's own, prefixed `service_`. Worker resources are read from the workers' last
 * reports when Prometheus scrapes, so a cluster's supervisor shows every worker's, labelled `worker`.
 */
import type {DownloadFinished, ModelStateChanged, RequestFinished, RequestStarted, ServiceEvents} from '../kernel/observability.js'
import type {ReportedInstance, WorkerStatus} from '../protocol/worker.js'

import {collectDefaultMetrics, Counter, Gauge, Histogram, Registry} from './prom-client.js'
import {usageSeries, waitingByModel} from './usage-metrics.js'

/** Seconds, from a few milliseconds (a token on a small model) to minutes (a long generation). */
const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 40, 80, 160]
const TOKEN_INTERVAL_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5]

/** A worker with its resources as it last reported them (a remote worker in its heartbeats). */
type ReportedWorker = Pick<WorkerStatus, 'id' | 'resources' | 'state'>


/** Removes the series whose `model_name` is the uid, whatever their other labels (a histogram's `le` aside). */
async function forgetModel(metrics: Array<Counter | Histogram>, uid: string): Promise<void> {
  for (const metric of metrics) {
    const seen = new Set<string>()
    for (const {labels} of (await metric.get()).values) {
      if (labels.model_name !== uid) continue
      const {le: _bucket, ...series} = labels
      const key = JSON.stringify(series)
      if (seen.has(key)) continue
      seen.add(key)
      metric.remove(series as Record<string, string>)
    }
  }
}

export interface MetricsSources {
  events: ServiceEvents
  workers: () => ReportedWorker[]
  /** Each running instance with its usage as its worker last reported it. */
  instances?: () => ReportedInstance[]
  /** Measures what the workers in this process report, before a scrape reads it. */
  refresh?: () => Promise<void>
}

/** What `GET /metrics` answers. */
export interface MetricsExposition {
  render(): Promise<{body: string; contentType: string}>
}

export class ServiceMetrics implements MetricsExposition {
  readonly registry = new Registry()
  private readonly listeners: {
    request: (event: RequestFinished) => void
    requestStarted: (event: RequestStarted) => void
    model: (event: ModelStateChanged) => void
    download: (event: DownloadFinished) => void
  }

  /** Each model's last state, for the count of models by state. */
  private readonly modelStates = new Map<string, ModelStateChanged['state']>()

  constructor(private readonly sources: MetricsSources) {
    collectDefaultMetrics({register: this.registry})
    const requests = this.requestSeries()
    const models = this.modelSeries()
    const downloads = this.downloadSeries()
    this.workerSeries()
    usageSeries(this.registry, {instances: sources.instances ?? (() => []), workers: sources.workers})
    const model = (event: ModelStateChanged) => {
      models(event)
      if (event.state === 'terminated') void requests.forget(event.uid)
    }

    this.listeners = {download: downloads, model, request: requests.finished, requestStarted: requests.started}
    const {events} = sources
    events.on('request', this.listeners.request)
    events.on('requestStarted', this.listeners.requestStarted)
    events.on('model', this.listeners.model)
    events.on('download', this.listeners.download)
  }

  async render(): Promise<{body: string; contentType: string}> {
    await this.sources.refresh?.()
    return {body: await this.registry.metrics(), contentType: this.registry.contentType}
  }

  /** Stops listening to the seam; the registry keeps its last values. */
  dispose(): void {
    const {events} = this.sources
    events.off('request', this.listeners.request)
    events.off('requestStarted', this.listeners.requestStarted)
    events.off('model', this.listeners.model)
    events.off('download', this.listeners.download)
  }

  private requestSeries() {
    const registers = [this.registry]
    const model = ['model_name']
    // Requests in flight on each model that has had one, so a model once busy shows 0 rather than nothing.
    const inFlight = new Map<string, number>()
    const instances = this.sources.instances ?? (() => [])
    // Registered with the registry, which reads it on every scrape: the requests in flight less those its engine has waiting.
    new Gauge({
      collect() {
        this.reset()
        const waiting = waitingByModel(instances())
        for (const [uid, count] of inFlight) this.set({model_name: uid}, Math.max(0, count - (waiting.get(uid) ?? 0)))
      },
      help: 'Number of requests running on the model: in flight, less those waiting for a sequence.',
      labelNames: model,
      name: 'vllm:num_requests_running',
      registers,
    })
    const success = new Counter({help: 'Count of requests the model answered completely with a success status.', labelNames: model, name: 'vllm:request_success_total', registers})
    const promptTokens = new Counter({help: 'Number of prefill tokens processed.', labelNames: model, name: 'vllm:prompt_tokens_total', registers})
    const generationTokens = new Counter({help: 'Number of generation tokens processed.', labelNames: model, name: 'vllm:generation_tokens_total', registers})
    const latency = new Histogram({buckets: LATENCY_BUCKETS, help: 'Histogram of end to end request latency in seconds.', labelNames: model, name: 'vllm:e2e_request_latency_seconds', registers})
    const ttft = new Histogram({buckets: LATENCY_BUCKETS, help: 'Histogram of time to first token in seconds.', labelNames: model, name: 'vllm:time_to_first_token_seconds', registers})
    const interToken = new Histogram({
      buckets: TOKEN_INTERVAL_BUCKETS,
      help: "Histogram of time per output token in seconds: each request's mean time between its output tokens after the first.",
      labelNames: model,
      name: 'vllm:time_per_output_token_seconds',
      registers,
    })
    const total = new Counter({
      help: 'HTTP requests answered, by route, method and status, the model they ran on and the name of the API key that made them (empty for none).',
      labelNames: ['method', 'route', 'status', ...model, 'api_key'],
      name: 'service_requests_total',
      registers,
    })
    const duration = new Histogram({buckets: LATENCY_BUCKETS, help: 'Duration of HTTP requests in seconds, by route and the model they ran on (empty for none).', labelNames: ['method', 'route', ...model], name: 'service_request_duration_seconds', registers})
    const abandoned = new Counter({help: 'Requests whose client went away before the whole answer was sent.', labelNames: ['route', ...model], name: 'service_requests_abandoned_total', registers})

    // By the key's name, which only the access-control config makes, so the series are as many as its keys at most.
    const keyLabels = ['api_key', ...model]
    const keyRequests = new Counter({help: 'Requests that ran a model, by the name of the API key (or user logins) that made them; with access control on.', labelNames: keyLabels, name: 'service_api_key_requests_total', registers})
    const keyTokens = new Counter({help: 'Tokens processed, by the name of the API key that asked and kind (prompt, generation); with access control on.', labelNames: [...keyLabels, 'kind'], name: 'service_api_key_tokens_total', registers})

    const perModel = [success, promptTokens, generationTokens, latency, ttft, interToken, total, duration, abandoned, keyRequests, keyTokens]
    return {
      /** Drops every series of a terminated model, so a service that runs many models in turn does not grow its scrape without end. */
      async forget(uid: string) {
        inFlight.delete(uid)
        await forgetModel(perModel, uid)
      },
      finished(event: RequestFinished) {
        const modelName = event.modelUid ?? ''
        total.inc({api_key: event.apiKey ?? '', method: event.method, model_name: modelName, route: event.route, status: String(event.status)})
        duration.observe({method: event.method, model_name: modelName, route: event.route}, event.durationMs / 1000)
        if (!event.completed) abandoned.inc({model_name: modelName, route: event.route})
        if (event.modelUid === undefined) return
        const labels = {model_name: event.modelUid}
        inFlight.set(event.modelUid, (inFlight.get(event.modelUid) ?? 1) - 1)
        if (event.apiKey !== undefined) {
          const byKey = {api_key: event.apiKey, model_name: event.modelUid}
          keyRequests.inc(byKey)
          if (event.promptTokens) keyTokens.inc({...byKey, kind: 'prompt'}, event.promptTokens)
          if (event.completionTokens) keyTokens.inc({...byKey, kind: 'generation'}, event.completionTokens)
        }

        if (event.promptTokens) promptTokens.inc(labels, event.promptTokens)
        if (event.completionTokens) generationTokens.inc(labels, event.completionTokens)
        if (event.ttftMs !== undefined) ttft.observe(labels, event.ttftMs / 1000)
        if (event.ttftMs !== undefined && event.completionTokens !== undefined && event.completionTokens > 1)
          interToken.observe(labels, (event.durationMs - event.ttftMs) / 1000 / (event.completionTokens - 1))
        if (event.completed && event.status < 400) {
          success.inc(labels)
          latency.observe(labels, event.durationMs / 1000)
        }
      },
      started(event: RequestStarted) {
        inFlight.set(event.modelUid, (inFlight.get(event.modelUid) ?? 0) + 1)
      },
    }
  }

  private modelSeries() {
    const states = this.modelStates
    // Registered with the registry, which reads it on every scrape.
    new Gauge({
      collect() {
        this.reset()
        for (const state of ['launching', 'ready', 'error'] as const) this.set({state}, 0)
        for (const state of states.values()) this.inc({state})
      },
      help: 'Models in the service by state (launching, ready, restarting, error).',
      labelNames: ['state'],
      name: 'service_models',
      registers: [this.registry],
    })
    const failures = new Counter({help: 'Models that failed to launch or whose process failed.', labelNames: ['model_name'], name: 'service_model_failures_total', registers: [this.registry]})
    const restarts = new Counter({help: 'Relaunches of models whose process crashed (self-healing).', labelNames: ['model_name'], name: 'service_model_restarts_total', registers: [this.registry]})
    const loads = new Counter({help: 'Launches a request caused: a known model that was not running, launched on demand.', labelNames: ['model_name'], name: 'service_model_on_demand_loads_total', registers: [this.registry]})
    const unloads = new Counter({help: 'Models the service unloaded, by why: idle past their keep-alive, keep_alive 0, or evicted for room.', labelNames: ['model_name', 'reason'], name: 'service_model_unloads_total', registers: [this.registry]})
    return (event: ModelStateChanged) => {
      if (event.state === 'terminated') {
        states.delete(event.uid)
        // An unloaded model stays known, and its loads and unloads with it; an operator's terminate forgets them too.
        void forgetModel(event.unload ? [failures, restarts] : [failures, restarts, loads, unloads], event.uid)
      }

      else states.set(event.uid, event.state)
      if (event.state === 'error') failures.inc({model_name: event.uid})
      if (event.state === 'restarting') restarts.inc({model_name: event.uid})
      if (event.state === 'launching' && event.details?.on_demand) loads.inc({model_name: event.uid})
      if (event.unload) unloads.inc({model_name: event.uid, reason: event.unload})
    }
  }

  private downloadSeries() {
    const registers = [this.registry]
    const bytes = new Counter({help: 'Bytes of model weights fetched from hubs.', labelNames: ['hub'], name: 'service_download_bytes_total', registers})
    const downloads = new Counter({help: 'Downloads of model weights, by hub and how they ended (completed, failed, cancelled).', labelNames: ['hub', 'outcome'], name: 'service_downloads_total', registers})
    const seconds = new Histogram({buckets: [1, 5, 15, 30, 60, 120, 300, 600, 1200, 2400], help: 'Duration of downloads of model weights in seconds.', labelNames: ['hub', 'outcome'], name: 'service_download_duration_seconds', registers})
    return (event: DownloadFinished) => {
      bytes.inc({hub: event.hub}, Math.max(event.bytes, 0))
      downloads.inc({hub: event.hub, outcome: event.outcome})
      seconds.observe({hub: event.hub, outcome: event.outcome}, event.durationMs / 1000)
    }
  }

  /** Gauges read from the workers when Prometheus scrapes, so they are as fresh as the workers' last reports. */
  private workerSeries() {
    const {workers} = this.sources
    const registers = [this.registry]
    const gauge = (name: string, help: string, labelNames: string[], values: (worker: ReportedWorker) => Array<[Record<string, string>, number]>) =>
      new Gauge({
        collect() {
          this.reset()
          for (const worker of workers()) for (const [labels, value] of values(worker)) this.set({...labels, worker: worker.id}, value)
        },
        help,
        labelNames: ['worker', ...labelNames],
        name,
        registers,
      })
    gauge('service_worker_up', 'Whether the worker answers (1) or is lost (0).', [], (worker) => [[{}, worker.state === 'ready' ? 1 : 0]])
    gauge('service_worker_cpu_count', 'CPUs the worker can use.', [], (worker) => [[{}, worker.resources.cpu_count]])
    gauge('service_worker_memory_total_bytes', "The worker machine's memory.", [], (worker) => [[{}, worker.resources.memory_total_bytes]])
    gauge('service_worker_memory_free_bytes', "The worker machine's free memory.", [], (worker) => [[{}, worker.resources.memory_free_bytes]])
    const gpuLabels = ['gpu', 'gpu_name', 'gpu_uuid']
    const perGpu = (field: 'memory_free_bytes' | 'memory_total_bytes') => (worker: ReportedWorker) =>
      worker.resources.gpus.map((gpu): [Record<string, string>, number] => [{gpu: String(gpu.index), gpu_name: gpu.name, gpu_uuid: gpu.uuid}, gpu[field]])
    gauge('service_worker_gpu_memory_total_bytes', "Memory of each of the worker's GPUs.", gpuLabels, perGpu('memory_total_bytes'))
    gauge('service_worker_gpu_memory_free_bytes', "Free memory of each of the worker's GPUs.", gpuLabels, perGpu('memory_free_bytes'))
  }
}
