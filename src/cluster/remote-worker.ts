/**
 * The supervisor's side of a worker on the network: `WorkerApi` spoken over HTTP to the worker's own server
 * (worker-routes.ts), so the supervisor's code is the same for a local and a remote worker. Streams (launch
 * progress, engine events) arrive as server-sent events and are yielded as they come, never buffered; aborting
 * a call closes its connection, which the worker turns into an abort of the work.
 */
import type {CachedModel} from '../weights/cache.js'
import type {InstanceLaunch, InstanceSummary, WorkerFrame, WorkerMemoryEstimate, WorkerResources, WorkerStatus} from '../protocol/worker.js'
import type {VirtualEnvironment} from '../protocol/virtualenvs.js'
import type {LaunchOptions, WorkerApi} from './worker.js'

import {errorFromReply, sendJson} from '../client/http.js'
import {readEventData} from '../client/server-sent-events.js'
import {untrustedCertificateAdvice} from '../kernel/certificates.js'
import {ServiceError} from '../kernel/errors.js'
import {currentRequestId} from '../kernel/request-context.js'

export interface RemoteWorkerOptions {
  /** Base URL of the worker's server, e.g. http://10.0.0.2:41000. */
  address: string
  version: string
  resources: WorkerResources
  instances: InstanceSummary[]
  /** Sent as a bearer credential on every call when the cluster has access control on. */
  clusterToken?: string
  fetch?: typeof fetch
  now?: () => number
}

/** A call made for a request carries its id, so the worker's log lines (and its model's) about it carry it too. */
const carryingRequestId =
  (fetcher: typeof fetch): typeof fetch =>
  (url, init) => {
    const requestId = currentRequestId()
    return fetcher(url, requestId === undefined ? init : {...init, headers: {...(init?.headers as Record<string, string>), 'x-request-id': requestId}})
  }

export class RemoteWorker implements WorkerApi {
  readonly id: string
  private resources: WorkerResources
  private running: InstanceSummary[]
  private lastSeen: number
  private lost = false
  /** Aborted when the worker is lost: every call in flight to it ends at once instead of hanging. */
  private alive = new AbortController()
  private readonly fetch: typeof fetch
  private readonly now: () => number

  constructor(private readonly options: RemoteWorkerOptions) {
    this.id = options.address.replace(/^https?:\/\//, '')
    this.resources = options.resources
    this.running = options.instances
    this.fetch = carryingRequestId(options.fetch ?? globalThis.fetch)
    this.now = options.now ?? Date.now
    this.lastSeen = this.now()
  }

  /** A heartbeat: the worker's current resources and instances. */
  heartbeat(resources: WorkerResources, instances: InstanceSummary[]): void {
    this.resources = resources
    this.running = instances
    this.lastSeen = this.now()
  }

  /** How long since the worker was last heard from, in milliseconds. */
  silentFor(): number {
    return this.now() - this.lastSeen
  }

  markLost(why: string): void {
    this.lost = true
    this.alive.abort(new ServiceError(503, 'worker_lost', why))
  }

  async launch(launch: InstanceLaunch, {onProgress, signal}: LaunchOptions = {}): Promise<InstanceSummary> {
    for await (const frame of this.stream('POST', '/v1/worker/instances', launch, signal)) {
      if ('progress' in frame) onProgress?.(frame.progress)
      else if ('summary' in frame) {
        this.running = [...this.running.filter((s) => s.uid !== frame.summary.uid), frame.summary]
        return frame.summary
      }
    }

    throw new ServiceError(502, 'connection_failed', `worker ${this.id} ended the launch of ${launch.load.modelUid} without an answer.`)
  }

  async terminate(uid: string): Promise<void> {
    await this.call('DELETE', `/v1/worker/instances/${encodeURIComponent(uid)}`)
    this.running = this.running.filter((s) => s.uid !== uid)
  }

  async *invoke(uid: string, operation: string, payload: unknown, signal: AbortSignal): AsyncIterable<unknown> {
    for await (const frame of this.stream('POST', `/v1/worker/instances/${encodeURIComponent(uid)}/invoke`, {operation, payload}, signal))
      if ('event' in frame) yield frame.event
  }

  instances(): InstanceSummary[] {
    return this.running
  }

  async cachedModels(): Promise<CachedModel[]> {
    return ((await this.call('GET', '/v1/worker/cache')) as {list: CachedModel[]}).list
  }

  async removeCachedModel(version: string): Promise<string[]> {
    return ((await this.call('DELETE', `/v1/worker/cache?model_version=${encodeURIComponent(version)}`)) as {paths: string[]}).paths
  }

  async virtualEnvironments(): Promise<VirtualEnvironment[]> {
    return ((await this.call('GET', '/v1/worker/virtualenvs')) as {list: VirtualEnvironment[]}).list
  }

  async removeVirtualEnvironment(name: string): Promise<string> {
    return ((await this.call('DELETE', `/v1/worker/virtualenvs/${encodeURIComponent(name)}`)) as {path: string}).path
  }

  async estimateMemory(launch: InstanceLaunch, signal?: AbortSignal): Promise<WorkerMemoryEstimate> {
    return (await this.call('POST', '/v1/worker/memory', launch, signal)) as WorkerMemoryEstimate
  }

  status(): WorkerStatus {
    return {address: this.options.address, id: this.id, last_seen: this.lastSeen, resources: this.resources, state: this.lost ? 'lost' : 'ready', version: this.options.version}
  }

  /** Asks the worker to end its models and exit (`servicectl stop-cluster`). */
  async shutdown(): Promise<void> {
    await this.call('POST', '/v1/worker/shutdown')
  }

  /** The supervisor stops using the worker; the worker and its models keep running (a restarted supervisor finds them again). */
  async dispose(): Promise<void> {
    this.alive.abort(new ServiceError(503, 'worker_lost', `the supervisor is shutting down.`))
  }

  private async call(method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<unknown> {
    const response = await this.send(method, path, body, signal)
    const text = await response.text()
    return text ? JSON.parse(text) : null
  }

  private async *stream(method: string, path: string, body: unknown, signal?: AbortSignal): AsyncGenerator<WorkerFrame> {
    const response = await this.send(method, path, body, signal)
    for await (const frame of readFrames(response.body!)) {
      if ('error' in frame) throw new ServiceError(frame.error.status, frame.error.code, frame.error.message, frame.error.param)
      yield frame
    }
  }

  private async send(method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<Response> {
    const signals = [this.alive.signal, ...(signal ? [signal] : [])]
    let response: Response
    try {
      response = await sendJson(this.fetch, `${this.options.address}${path}`, {body, credential: this.options.clusterToken, method, signal: AbortSignal.any(signals)})
    } catch (error) {
      if (this.alive.signal.aborted) throw this.alive.signal.reason
      if (signal?.aborted) throw error
      const advice = untrustedCertificateAdvice(error)
      if (advice) throw new ServiceError(503, 'worker_unreachable', `the supervisor cannot call worker ${this.id}: ${advice}.`)
      throw new ServiceError(503, 'worker_unreachable', `worker ${this.id} does not answer (${((error as Error & {cause?: Error}).cause ?? (error as Error)).message}).`)
    }

    if (!response.ok) {
      const {error, text} = await errorFromReply(response)
      throw error ?? new ServiceError(502, 'internal_error', `worker ${this.id} answered ${response.status}: ${text.slice(0, 200)}`)
    }

    return response
  }
}

/** Frames of a server-sent event stream, each `data:` line parsed as JSON. */
export async function* readFrames(body: ReadableStream<Uint8Array>): AsyncGenerator<WorkerFrame> {
  for await (const data of readEventData(body)) yield JSON.parse(data) as WorkerFrame
}
