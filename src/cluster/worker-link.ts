/**
 * The worker's side of joining: it registers with the supervisor (saying exactly what is wrong when it
 * cannot), then sends a heartbeat with its resources and models every interval. When the supervisor answers
 * that it does not know the worker (it restarted, or gave the worker up as lost), the worker registers again
 * with the models still running on it, so they reappear; while the supervisor is unreachable it keeps trying.
 */
import type {Logger} from '../kernel/contracts.js'
import type {WorkerApi} from './worker.js'

import {untrustedCertificateAdvice} from '../kernel/certificates.js'
import {ServiceError} from '../kernel/errors.js'
import {VERSION_HEADER} from '../protocol/version.js'

export interface SupervisorLinkOptions {
  /** The supervisor's endpoint, e.g. http://10.0.0.1:9997. */
  endpoint: string
  /** This worker's server as the supervisor reaches it. */
  address: string
  version: string
  worker: WorkerApi
  log: Logger
  clusterToken?: string
  fetch?: typeof fetch
  setTimeout?: (run: () => void, ms: number) => unknown
  clearTimeout?: (timer: unknown) => void
}

export class SupervisorLink {
  private heartbeatMs = 3000
  private timer?: unknown
  private stopped = false
  /** Whether the last heartbeat got through, so a lost connection is logged once, not every beat. */
  private connected = true

  constructor(private readonly options: SupervisorLinkOptions) {}

  /** Joins the supervisor, then keeps sending heartbeats. A refused join is a ServiceError saying why. */
  async join(): Promise<void> {
    const {endpoint, version} = this.options
    const response = await this.send('GET', '/v1/cluster/auth')
    const supervisorVersion = response.headers.get(VERSION_HEADER)
    if (supervisorVersion && supervisorVersion !== version)
      throw new ServiceError(409, 'version_mismatch', `the supervisor at ${endpoint} runs version ${supervisorVersion} but this worker is ${version}; install the same version on every machine.`)
    const {auth} = (await response.json()) as {auth: boolean}
    if (auth && !this.options.clusterToken)
      throw new ServiceError(401, 'unauthorized', `the supervisor at ${endpoint} has access control on: give this worker its cluster token with --cluster-token or SERVICE_CLUSTER_TOKEN.`)
    await this.register()
    this.schedule()
  }

  stop(): void {
    this.stopped = true
    if (this.timer) (this.options.clearTimeout ?? ((t) => clearTimeout(t as NodeJS.Timeout)))(this.timer)
  }

  private async register() {
    const {address, version, worker} = this.options
    await this.measure()
    const response = await this.send('POST', '/v1/cluster/workers', {address, instances: worker.instances(), resources: worker.status().resources, version})
    const answer = (await response.json()) as {heartbeat_interval_ms: number; worker_id: string}
    this.heartbeatMs = answer.heartbeat_interval_ms
    this.options.log.info(`registered with the supervisor at ${this.options.endpoint} as ${answer.worker_id} (${worker.instances().length} models running)`)
  }

  private schedule() {
    if (this.stopped) return
    this.timer = (this.options.setTimeout ?? setTimeout)(() => void this.beat().finally(() => this.schedule()), this.heartbeatMs)
  }

  private async beat() {
    const {address, worker} = this.options
    try {
      await this.measure()
      await this.send('POST', '/v1/cluster/workers/heartbeat', {address, instances: worker.instances(), resources: worker.status().resources})
      if (!this.connected) this.options.log.info(`the supervisor at ${this.options.endpoint} answers again`)
      this.connected = true
    } catch (error) {
      if ((error as ServiceError).code === 'worker_not_registered') {
        await this.register().catch((failure: Error) => this.options.log.warn(`registering again failed: ${failure.message}`))
        this.connected = true
      } else if (this.connected) {
        this.connected = false
        this.options.log.warn(`${(error as Error).message}; the models here keep running, and the worker keeps trying`)
      }
    }
  }

  /** Its processes' memory and CPU, measured just before they are reported; a failed measure reports none. */
  private async measure() {
    await this.options.worker.measure?.().catch((error: Error) => this.options.log.debug(`could not measure the worker's processes: ${error.message}`))
  }

  private async send(method: string, path: string, body?: unknown): Promise<Response> {
    const {clusterToken, endpoint} = this.options
    const headers: Record<string, string> = {accept: 'application/json'}
    if (body !== undefined) headers['content-type'] = 'application/json'
    if (clusterToken) headers.authorization = `Bearer ${clusterToken}`
    let response: Response
    try {
      response = await (this.options.fetch ?? fetch)(`${endpoint}${path}`, {body: body === undefined ? undefined : JSON.stringify(body), headers, method, signal: AbortSignal.timeout(10_000)})
    } catch (error) {
      const advice = untrustedCertificateAdvice(error)
      if (advice) throw new ServiceError(503, 'connection_failed', `cannot join the supervisor at ${endpoint}: ${advice}.`)
      const cause = ((error as Error & {cause?: Error}).cause ?? (error as Error)).message
      throw new ServiceError(503, 'connection_failed', `cannot reach the supervisor at ${endpoint} (${cause}); is it running, and is -e its address and port as seen from this machine?`)
    }

    if (!response.ok) {
      const text = await response.text()
      let error: {code?: string; message?: string} = {}
      try {
        error = (JSON.parse(text) as {error: typeof error}).error ?? {}
      } catch {}

      if (response.status === 401 && !error.code?.startsWith('worker'))
        throw new ServiceError(401, 'unauthorized', `the supervisor at ${endpoint} refused this worker's cluster token; give the supervisor and every worker the same --cluster-token.`)
      throw new ServiceError(response.status, error.code ?? 'internal_error', error.message ?? `the supervisor at ${endpoint} answered ${response.status}: ${text.slice(0, 200)}`)
    }

    return response
  }
}
