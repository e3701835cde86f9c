/**
 * The replicas a worker took with it when it was lost, or when it registered again as a new process, kept until it
 * rejoins. A worker that comes back without them (it was restarted: kill -9, a reboot, a new container) gets them
 * relaunched on it with the launches they had, so a model keeps the replicas it was launched with. A worker counts as
 * the same machine when its host is the same, whatever its port: a restarted `service-worker` without `-p` takes
 * another port, and a model launched with `worker_ip` stays on that host.
 */
import type {Logger} from '../kernel/contracts.js'
import type {ModelState} from '../kernel/observability.js'
import type {InstanceSummary} from '../protocol/worker.js'
import type {InstanceRecord, ModelTable, Replica} from './model-table.js'
import type {WorkerApi} from './worker.js'

import {ServiceError} from '../kernel/errors.js'

interface AwayReplica {
  record: InstanceRecord
  replica: Replica
}

/** The host of a worker id (`host:port`, or `[v6]:port`). */
export const workerHost = (id: string) => id.replace(/:\d+$/, '')

export interface RejoinOptions {
  log: Logger
  changed?: (record: InstanceRecord, state: ModelState, reason?: string) => void
}

export class RejoiningReplicas {
  private readonly away = new Map<string, AwayReplica[]>()

  constructor(
    private readonly table: ModelTable,
    private readonly options: RejoinOptions,
  ) {}

  /** Keeps the replicas a worker holds, before it leaves the table, for when its host comes back. */
  setAside(worker: WorkerApi): void {
    const host = workerHost(worker.id)
    const kept = this.away.get(host) ?? []
    for (const record of this.table.on(worker)) for (const replica of record.replicas) if (replica.worker === worker && replica.launch) kept.push({record, replica})
    if (kept.length > 0) this.away.set(host, kept)
  }

  /** A model whose worker is gone was terminated: nothing of it is relaunched. Answers its record, if it was kept. */
  forget(uid: string): InstanceRecord | undefined {
    let record: InstanceRecord | undefined
    for (const [host, kept] of this.away) {
      record ??= kept.find((away) => away.record.uid === uid)?.record
      const rest = kept.filter((away) => away.record.uid !== uid)
      if (rest.length > 0) this.away.set(host, rest)
      else this.away.delete(host)
    }

    this.table.forgetLost(uid)
    return record
  }

  /** A worker joined: what its host ran before and did not bring back is relaunched on it. */
  bringBack(worker: WorkerApi, running: InstanceSummary[]): void {
    const host = workerHost(worker.id)
    const kept = this.away.get(host)
    if (!kept) return
    this.away.delete(host)
    for (const away of kept) if (!running.some((summary) => summary.uid === away.replica.uid)) void this.relaunch(worker, away)
  }

  private async relaunch(worker: WorkerApi, {record, replica}: AwayReplica): Promise<void> {
    const {log} = this.options
    const current = this.table.get(record.uid)
    // Launched anew under the same uid, terminated, or back already: nothing of this launch is missing.
    if (current ? current !== record || current.replicas.some((held) => held.uid === replica.uid) : !this.table.lostReason(record.uid)) return
    log.info(`worker ${worker.id} joined without ${replica.uid} of model ${record.uid}, which ran on its host before: relaunching it there`)
    if (!current) this.table.markLost(record.uid, `model ${record.uid} is being relaunched on worker ${worker.id}, which came back without it; retry shortly.`)
    try {
      const summary = await worker.launch(replica.launch!)
      const back: Replica = {...replica, pid: summary.pid, worker}
      const now = this.table.get(record.uid)
      if (now && now !== record) {
        await worker.terminate(back.uid).catch(() => {})
        return
      }

      record.replicas = [...(now ? record.replicas : []), back].sort((a, b) => a.uid.localeCompare(b.uid))
      record.status = 'ready'
      record.error = undefined
      if (!now) this.table.add(record)
      log.info(`model ${record.uid} has ${replica.uid} back on worker ${worker.id} (pid ${summary.pid})`)
      this.options.changed?.(record, 'ready')
    } catch (error) {
      const message = `model ${record.uid} could not be relaunched on worker ${worker.id} after it came back: ${(error as Error).message}`
      log.error(message)
      if (this.table.get(record.uid)) return
      // In the table as failed, so that it shows why and can be terminated.
      record.replicas = []
      record.status = 'error'
      record.error = new ServiceError(503, 'model_crashed', `${message.replace(/\.$/, '')}; terminate it and launch it again.`)
      this.table.add(record)
      this.options.changed?.(record, 'error', message)
    }
  }
}
