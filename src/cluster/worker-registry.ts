/**
 * The supervisor's side of joining: a worker registers (checked: same version, and the supervisor can reach
 * it at the address it gives), then sends heartbeats. A worker silent for longer than the lost timeout is
 * marked lost; its models leave the table and requests to them fail at once with a 503, until it registers
 * again with the models still running on it.
 */
import type {Logger} from '../kernel/contracts.js'
import type {ClusterTiming, Registration} from '../protocol/membership.js'
import type {WorkerAdmission} from '../protocol/services.js'
import type {Supervisor} from './supervisor.js'
import type {InstanceSummary, WorkerResources} from '../protocol/worker.js'

import {ServiceError} from '../kernel/errors.js'
import {RemoteWorker} from './remote-worker.js'

export interface WorkerRegistryOptions {
  supervisor: Supervisor
  version: string
  timing: ClusterTiming
  log: Logger
  clusterToken?: string
  fetch?: typeof fetch
  now?: () => number
  setInterval?: (run: () => void, ms: number) => {unref?(): unknown}
  clearInterval?: (timer: unknown) => void
}

/** How long the supervisor waits for a joining worker to answer its reachability check. */
const REACH_TIMEOUT_MS = 5000

export class WorkerRegistry implements WorkerAdmission {
  private readonly remotes = new Map<string, RemoteWorker>()
  private timer?: unknown

  constructor(private readonly options: WorkerRegistryOptions) {}

  /** Checks for silent workers every quarter of the lost timeout, so one is found lost soon after it is. */
  start(): void {
    const every = Math.max(50, Math.min(this.options.timing.heartbeatMs, this.options.timing.lostMs / 4))
    const timer = (this.options.setInterval ?? setInterval)(() => this.check(), every)
    timer.unref?.()
    this.timer = timer
  }

  stop(): void {
    if (this.timer) (this.options.clearInterval ?? ((t) => clearInterval(t as NodeJS.Timeout)))(this.timer)
    this.timer = undefined
  }

  async register(registration: Registration): Promise<{worker_id: string; heartbeat_interval_ms: number; lost_timeout_ms: number}> {
    const {address, version} = registration
    if (version !== this.options.version)
      throw new ServiceError(409, 'version_mismatch', `the worker at ${address} runs version ${version} but the supervisor runs ${this.options.version}; install the same version on every machine.`)
    await this.checkReach(address)
    const remote = new RemoteWorker({
      address,
      clusterToken: this.options.clusterToken,
      fetch: this.options.fetch,
      instances: registration.instances as unknown as InstanceSummary[],
      now: this.options.now,
      resources: registration.resources as WorkerResources,
      version,
    })
    this.remotes.get(remote.id)?.markLost(`worker ${remote.id} registered again.`)
    this.remotes.set(remote.id, remote)
    this.options.supervisor.addWorker(remote)
    this.options.log.info(`worker ${remote.id} joined (version ${version}, ${registration.instances.length} models running)`)
    return {heartbeat_interval_ms: this.options.timing.heartbeatMs, lost_timeout_ms: this.options.timing.lostMs, worker_id: remote.id}
  }

  heartbeat(address: string, resources: WorkerResources, instances: InstanceSummary[]): void {
    const remote = this.remotes.get(address.replace(/^https?:\/\//, ''))
    // A supervisor that restarted, or gave the worker up as lost, asks it to register again.
    if (!remote || remote.status().state === 'lost')
      throw new ServiceError(404, 'worker_not_registered', `worker ${address} is not registered with this supervisor; register first.`)
    remote.heartbeat(resources, instances)
    // A model process that died on the worker is reported in its heartbeats; the model shows it here too.
    for (const instance of instances.filter((summary) => summary.state === 'crashed'))
      this.options.supervisor.markCrashed(instance.uid, new ServiceError(503, 'model_crashed', instance.error ?? `model ${instance.uid} crashed on worker ${remote.id}.`), instance.pid)
  }

  /** Marks workers silent for longer than the lost timeout as lost. */
  check(): void {
    for (const remote of this.remotes.values()) {
      if (remote.status().state === 'lost' || remote.silentFor() <= this.options.timing.lostMs) continue
      const why = `worker ${remote.id} stopped answering (no heartbeat for ${(remote.silentFor() / 1000).toFixed(1)} s); its models come back when it does, relaunched there if it restarted.`
      remote.markLost(why)
      this.options.supervisor.loseWorker(remote.id, why)
    }
  }

  /** Stops every worker (each ends its models and exits); answers the ids of those that could not be told. */
  async shutdownWorkers(): Promise<string[]> {
    const remotes = [...this.remotes.values()].filter((remote) => remote.status().state === 'ready')
    const results = await Promise.allSettled(remotes.map((remote) => remote.shutdown()))
    return remotes.filter((_, i) => results[i].status === 'rejected').map((remote) => remote.id)
  }

  /** The joining worker must answer at the address it gave, or nothing the supervisor sends it would arrive. */
  private async checkReach(address: string) {
    const headers: Record<string, string> = this.options.clusterToken ? {authorization: `Bearer ${this.options.clusterToken}`} : {}
    let response: Response
    try {
      response = await (this.options.fetch ?? fetch)(`${address}/v1/worker/health`, {headers, signal: AbortSignal.timeout(REACH_TIMEOUT_MS)})
    } catch (error) {
      const cause = ((error as Error & {cause?: Error}).cause ?? (error as Error)).message
      throw new ServiceError(
        502,
        'worker_unreachable',
        `the supervisor cannot reach the worker at ${address} (${cause}). Start service-worker with -H set to an address of its machine that the supervisor can reach (not 127.0.0.1 when they are on different machines), and let the supervisor through to that port.`,
      )
    }

    if (response.status === 401)
      throw new ServiceError(401, 'unauthorized', `the worker at ${address} refused the supervisor's cluster token; give the supervisor and every worker the same --cluster-token.`)
    if (!response.ok) throw new ServiceError(502, 'worker_unreachable', `the worker at ${address} answered the supervisor's check with ${response.status}; is something else listening there?`)
  }
}
