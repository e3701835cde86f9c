/**
 * The workers the supervisor places models on, and what joining and leaving does to the model table: a worker
 * that joins (again) brings the models it runs back into the table, so nothing a worker runs is ever forgotten;
 * one that is lost takes its replicas with it, and requests to models left with none fail with why.
 */
import type {Kernel} from '../kernel/kernel.js'
import type {Logger} from '../kernel/contracts.js'
import type {LaunchProgress} from '../protocol/launch.js'
import type {InstanceSummary, WorkerStatus} from '../protocol/worker.js'
import type {ModelState} from '../kernel/observability.js'
import type {InstanceRecord, ModelTable} from './model-table.js'
import type {PlacementCandidate} from './placement.js'
import type {WorkerApi} from './worker.js'

import {ServiceError} from '../kernel/errors.js'
import {failedProgress} from './launch-progress.js'
import {noWorkerError} from './placement.js'
import {RejoiningReplicas} from './worker-rejoin.js'

export interface WorkerMembershipOptions {
  kernel: Kernel
  log: Logger
  now: () => number
  /** Told of a model that comes into the table from a worker's report (ready, or failed with why). */
  changed?: (record: InstanceRecord, state: ModelState, reason?: string) => void
}

export class WorkerMembership {
  private readonly workers = new Map<string, WorkerApi>()
  private readonly rejoining: RejoiningReplicas

  constructor(
    private readonly table: ModelTable,
    private readonly options: WorkerMembershipOptions,
    workers: WorkerApi[],
  ) {
    for (const worker of workers) this.workers.set(worker.id, worker)
    this.rejoining = new RejoiningReplicas(table, options)
  }

  /**
   * A worker joins, or joins again (after a restart of either side, or after it was lost), with the models it runs;
   * what its host ran before and did not bring back is relaunched on it.
   */
  add(worker: WorkerApi, running: InstanceSummary[]): void {
    const previous = this.workers.get(worker.id)
    if (previous && previous !== worker) {
      this.rejoining.setAside(previous)
      for (const uid of this.table.detach(previous)) this.table.markLost(uid, `model ${uid} is unavailable: its worker ${previous.id} registered again without it.`)
    }

    this.workers.set(worker.id, worker)
    for (const summary of running) this.adopt(worker, summary)
    this.rejoining.bringBack(worker, running)
  }

  /** A worker stopped answering: its models leave the table, and requests to them fail at once with `why`. */
  lose(id: string, why: string): void {
    const worker = this.workers.get(id)
    if (!worker) return
    const held = this.table.on(worker)
    this.rejoining.setAside(worker)
    for (const uid of this.table.detach(worker)) {
      this.table.markLost(uid, `model ${uid} is unavailable: ${why}`)
      this.options.changed?.(held.find((record) => record.uid === uid)!, 'error', `its worker ${id} was lost: ${why}`)
    }
    this.options.log.warn(`worker ${id} lost: ${why}`)
  }

  /** A model whose worker is gone was terminated: it is not relaunched when the worker comes back. */
  forgetLost(uid: string): InstanceRecord | undefined {
    return this.rejoining.forget(uid)
  }

  /** Every worker, as `GET /v1/cluster/workers` shows it, with the models each runs. */
  describe(): Array<WorkerStatus & {models: string[]}> {
    return this.all().map((worker) => ({...worker.status(), models: this.table.on(worker).map((record) => record.uid)}))
  }

  all(): WorkerApi[] {
    return [...this.workers.values()]
  }

  /** Workers that answer, in a stable order. */
  ready(): WorkerApi[] {
    return this.all().filter((worker) => worker.status().state === 'ready')
  }

  /** The workers that answer, once what each reports is known (WorkerApi.settled). */
  async settledReady(): Promise<WorkerApi[]> {
    const ready = this.ready()
    await Promise.all(ready.map((worker) => worker.settled?.()))
    return ready
  }

  /** The workers that answer, as placement sees them; none is a 503 naming the lost ones. */
  candidates(): Array<PlacementCandidate<WorkerApi>> {
    const ready = this.ready()
    if (ready.length === 0) throw this.noWorker()
    return ready.map((worker) => ({models: this.table.on(worker).length, status: worker.status(), worker}))
  }

  noWorker(): ServiceError {
    return noWorkerError(this.all().map((worker) => worker.id))
  }

  /**
   * A worker rejoined late with a copy of a model that runs (or is being launched) elsewhere with all its replicas, as
   * after a restarted supervisor relaunched a model no worker had brought back in time: the copy is stopped, so no
   * model runs twice.
   */
  private stopSurplus(worker: WorkerApi, instanceUid: string, uid: string) {
    this.options.log.warn(`worker ${worker.id} brought back ${instanceUid}, but model ${uid} already runs with all its replicas; stopping that copy`)
    worker.terminate(instanceUid).catch((error: Error) => this.options.log.warn(`could not stop the surplus copy ${instanceUid} on worker ${worker.id}: ${error.message}`))
  }

  /** Takes an instance a worker reports into the table: a model of its own, or one more replica of one. */
  private adopt(worker: WorkerApi, summary: InstanceSummary) {
    const {launch} = summary
    if (!launch || (summary.state !== 'ready' && summary.state !== 'crashed')) return
    const uid = launch.replicaOf?.modelUid ?? launch.load.modelUid
    const replica = {gpus: launch.load.devices, pid: summary.pid, uid: summary.uid, worker}
    const existing = this.table.get(uid)
    if (existing) {
      if (existing.replicas.some((r) => r.uid === summary.uid && r.worker === worker)) return
      if (existing.status !== 'launching' && existing.replicas.length < existing.replica && !existing.replicas.some((r) => r.uid === summary.uid)) existing.replicas.push(replica)
      else this.stopSurplus(worker, summary.uid, uid)
      return
    }

    const {load} = launch
    const type = this.options.kernel.modelType(load.modelType)?.definition
    const crash = summary.state === 'crashed' ? new ServiceError(503, 'model_crashed', summary.error ?? `model ${uid} crashed.`) : undefined
    const ready: LaunchProgress = {downloaded_bytes: 0, error: null, files: [], hub: null, model_uid: uid, progress: 1, repo: load.spec.model_id ?? null, stage: 'ready', total_bytes: 0}
    const abilities = Array.isArray(summary.info.abilities) ? (summary.info.abilities as string[]) : (load.family.model_ability ?? type?.defaultAbilities ?? [])
    const record: InstanceRecord = {
      abilities,
      contextLength: typeof summary.info.contextLength === 'number' ? summary.info.contextLength : undefined,
      controller: new AbortController(),
      created: this.options.now(),
      done: Promise.resolve(),
      downloaded: false,
      engine: launch.engine,
      error: crash,
      family: load.family,
      info: summary.info,
      modelName: load.modelName,
      modelType: load.modelType,
      next: 0,
      parameters: load.parameters,
      progress: crash ? failedProgress(ready, crash) : ready,
      replica: launch.replicaOf?.replica ?? 1,
      replicas: [replica],
      spec: load.spec as InstanceRecord['spec'],
      status: summary.state === 'crashed' ? 'error' : 'ready',
      uid,
    }
    this.table.add(record)
    this.options.log.info(`model ${uid} is running on worker ${worker.id}`)
    this.options.changed?.(record, crash ? 'error' : 'ready', crash?.message)
  }
}
