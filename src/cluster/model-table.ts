/**
 * The supervisor's table of models: each model's record (its replicas on the workers, status and progress),
 * the launches that failed or were cancelled (their progress still answers), the models whose worker was lost,
 * and the launches whose uid is not known yet. Requests reach a model through its handle, which balances them
 * round robin over its replicas.
 */
import {randomBytes} from 'node:crypto'

import type {ResolvedSpec} from '../kernel/catalogue.js'
import type {LoadedModelInfo, ModelHandle, ModelLookup} from '../kernel/contracts.js'
import type {LaunchProgress} from '../protocol/launch.js'
import type {ModelStatus} from '../protocol/models.js'
import type {InstanceLaunch} from '../protocol/worker.js'
import type {GpuHolder} from './gpu-placement.js'
import type {Healing} from './self-healing.js'
import type {WorkerApi} from './worker.js'

import {badRequest, notFound, ServiceError} from '../kernel/errors.js'
import {MODEL_UID} from '../protocol/launch.js'
import {describeRecord} from './descriptions.js'
import {failedProgress} from './launch-progress.js'
import {replicasHoldingGpus, trackAnswers, untilRelaunched} from './self-healing.js'

/** Failed and cancelled launches whose outcome the progress route still answers. */
const ENDED_KEPT = 100

/** One running copy of a model, on one worker; `uid` is its handle there. */
export interface Replica {
  worker: WorkerApi
  uid: string
  pid?: number
  /** The worker's GPUs given to it alone (see gpu-placement.ts). */
  gpus?: number[]
  /** What the worker was asked to launch, so a crashed replica can be relaunched the same way. */
  launch?: InstanceLaunch
}

export interface InstanceRecord {
  uid: string
  modelType: string
  modelName: string
  engine: string
  spec: ResolvedSpec
  abilities: string[]
  /** Other names requests may address it by: a hub model's `hf.co/user/repo:quant`, lower-cased. */
  aliases?: string[]
  family: Record<string, unknown>
  parameters: Record<string, unknown>
  /** Where the model runs: one entry per replica placed (a lost worker's replicas leave). */
  replicas: Replica[]
  /** How many replicas the launch asked for. */
  replica: number
  /** Round-robin position among the replicas. */
  next: number
  status: ModelStatus
  error?: ServiceError
  created: number
  contextLength?: number
  /** What the engine reported when the model loaded. */
  info: LoadedModelInfo
  progress: LaunchProgress
  downloaded: boolean
  /** Aborted to cancel the launch. */
  controller: AbortController
  /** Settles when the launch is over: ready, or failed and cleaned up. */
  done: Promise<void>
  /** Set once its process crashed: its relaunches (self-healing.ts). */
  healing?: Healing
}

export class ModelTable {
  private readonly records = new Map<string, InstanceRecord>()
  /** Models whose worker stopped answering, by uid, with why: requests to them get a 503 saying so. */
  private readonly lost = new Map<string, string>()
  /** The last progress of launches that failed or were cancelled, by uid; their uids are free again. */
  private readonly ended = new Map<string, LaunchProgress>()
  /**
   * Launches whose uid is not in the table yet (a request whose body is still arriving, a placement still
   * choosing a worker): a terminate or cancel of a uid not in the table waits for them, so one sent together
   * with the launch finds it instead of a 404 that leaves the model running.
   */
  private readonly arriving = new Set<Promise<void>>()

  get(uid: string): InstanceRecord | undefined {
    return this.records.get(uid)
  }

  /** Puts a model in the table; its uid is no longer an ended launch's or a lost model's. */
  add(record: InstanceRecord): void {
    this.records.set(record.uid, record)
    this.ended.delete(record.uid)
    this.lost.delete(record.uid)
  }

  remove(uid: string): void {
    this.records.delete(uid)
  }

  clear(): void {
    this.records.clear()
  }

  /** Every model, by uid. */
  sorted(): InstanceRecord[] {
    return [...this.records.values()].sort((a, b) => a.uid.localeCompare(b.uid))
  }

  /** A worker's GPUs, and which models hold which (a launching model's too). */
  gpuHolder(worker: WorkerApi): GpuHolder {
    const taken = new Map<number, string>()
    for (const record of this.sorted())
      for (const replica of replicasHoldingGpus(record)) if (replica.worker === worker) for (const index of replica.gpus ?? []) taken.set(index, record.uid)
    return {gpus: worker.status().resources.gpus, id: worker.id, taken}
  }

  /** The models with a replica on this worker. */
  on(worker: WorkerApi): InstanceRecord[] {
    return this.sorted().filter((record) => record.replicas.some((replica) => replica.worker === worker))
  }

  /** Keeps a failed or cancelled launch's last progress, for whoever launched without waiting. */
  endLaunch(uid: string, progress: LaunchProgress): void {
    this.ended.set(uid, progress)
    if (this.ended.size > ENDED_KEPT) this.ended.delete(this.ended.keys().next().value!)
  }

  endedLaunch(uid: string): LaunchProgress | undefined {
    return this.ended.get(uid)
  }

  markLost(uid: string, why: string): void {
    this.lost.set(uid, why)
  }

  /** Forgets a model whose worker is gone (it was terminated): its uid is free again. */
  forgetLost(uid: string): void {
    this.lost.delete(uid)
  }

  /** Why a model is unavailable because its worker is gone; undefined for any other uid. */
  lostReason(uid: string): string | undefined {
    return this.lost.get(uid)
  }

  /** Where a launch is: its stage, overall fraction and download bytes; a failed one's error until relaunched. */
  progress(uid: string): LaunchProgress {
    const progress = this.records.get(uid)?.progress ?? this.ended.get(uid)
    if (!progress) this.require(uid)
    return {...progress!, files: progress!.files.map((file) => ({...file}))}
  }

  /** The model with this uid, or a 404 that names the running models unless `listRunning` is false (see ModelLookup). */
  require(uid: string, {listRunning = true}: ModelLookup = {}): InstanceRecord {
    const record = this.records.get(uid) ?? this.byAlias(uid)
    if (!record) {
      const lost = this.lost.get(uid)
      if (lost) throw new ServiceError(503, 'worker_lost', lost)
      const running = [...this.records.keys()]
      const ended = this.ended.get(uid)
      const why = ended?.error ? ` Its last launch ${ended.stage === 'cancelled' ? 'was cancelled' : `failed: ${ended.error.message}`}` : ''
      const others = running.length > 0 ? ` Running models: ${running.join(', ')}.` : ' No model is running; launch one with `servicectl launch`.'
      // Left out whole: even "no model is running" tells a caller who may not list models something about the others.
      throw notFound(`model "${uid}" is not running.${why}${listRunning ? others : ''}`, 'model_not_found', 'model')
    }

    return record
  }

  private byAlias(name: string): InstanceRecord | undefined {
    const wanted = name.toLowerCase()
    // `hub_name`: what a hub model's registration was made for (hub-launch.ts), so a relaunch after a restart answers to it too.
    for (const record of this.records.values()) if (record.aliases?.includes(wanted) || record.family.hub_name === wanted) return record
    return undefined
  }

  /** The uid a launch gets: the one it asks for, else (like Xinference) the model name, or it plus a short random suffix when that is taken. */
  chooseUid(requested: string | undefined, modelName: string): string {
    if (requested) {
      if (this.records.has(requested))
        throw badRequest(`model_uid "${requested}" is already in use; terminate that model first or choose another uid.`, 'model_uid')
      return requested
    }

    if (MODEL_UID.test(modelName) && !this.records.has(modelName)) return modelName
    let uid: string
    do uid = `${modelName.replaceAll(/[^\w.-]/g, '-').slice(0, 90)}-${randomBytes(4).toString('hex')}`
    while (this.records.has(uid))
    return uid
  }

  /**
   * Says that a launch request has arrived whose uid is not known yet; the function answered says it is
   * (the launch is in the table, or failed). Until then a terminate or cancel of an unknown uid waits.
   */
  launchArriving(): () => void {
    let arrived!: () => void
    const known = new Promise<void>((resolve) => (arrived = resolve))
    this.arriving.add(known)
    return () => {
      this.arriving.delete(known)
      arrived()
    }
  }

  /** Waits, when `uid` is not in the table, until the launches still arriving are in it (or failed). */
  async arrivalOf(uid: string): Promise<void> {
    if (!this.records.has(uid)) await Promise.all(this.arriving)
  }

  /** Removes a worker's replicas from every model; answers the uids of the models left with none. */
  detach(worker: WorkerApi): string[] {
    const emptied: string[] = []
    for (const record of this.records.values()) {
      if (record.status === 'launching' || !record.replicas.some((r) => r.worker === worker)) continue
      record.replicas = record.replicas.filter((r) => r.worker !== worker)
      if (record.replicas.length === 0) {
        this.records.delete(record.uid)
        emptied.push(record.uid)
      }
    }

    return emptied
  }

  /** The model a running instance (a replica) belongs to, and the replica. */
  replicaOf(instanceUid: string): {record: InstanceRecord; replica: Replica} | undefined {
    for (const record of this.records.values()) {
      const replica = record.replicas.find((candidate) => candidate.uid === instanceUid)
      if (replica) return {record, replica}
    }

    return undefined
  }

  /**
   * Marks a model whose process died on its own (that with `pid`, when told); requests to it get the same error until
   * it is relaunched. Answers the model when it is now failed (not when a replica of several died).
   */
  markCrashed(instanceUid: string, error: ServiceError, pid?: number): InstanceRecord | undefined {
    const record = [...this.records.values()].find((r) => r.replicas.some((replica) => replica.uid === instanceUid))
    if (!record || record.status !== 'ready') return undefined
    // A heartbeat sent before a relaunch reports the process that crashed, not the one that replaced it.
    const current = record.replicas.find((replica) => replica.uid === instanceUid)!.pid
    if (pid !== undefined && current !== undefined && pid !== current) return undefined
    // A replica that dies leaves the rotation; the model fails only when none is left.
    if (record.replicas.length > 1) {
      record.replicas = record.replicas.filter((replica) => replica.uid !== instanceUid)
      return undefined
    }

    record.status = 'error'
    record.error = error
    record.progress = failedProgress(record.progress, error)
    return record
  }
}

/** What a route holds of a model: its description, and calls to it, balanced round robin over its replicas. */
export function modelHandle(record: InstanceRecord): ModelHandle {
  const {uid} = record
  return {
    abilities: record.abilities,
    // Made when asked for: most requests never look at it.
    get description() {
      return describeRecord(record)
    },
    invoke: (operation, payload, signal) => {
      if (record.status === 'restarting') return invokeRelaunched(record, operation, payload, signal)
      if (record.status === 'error') throw record.error!
      if (record.status !== 'ready') throw new ServiceError(503, 'model_not_ready', `model ${uid} is ${record.status}; retry when it is ready.`)
      const replica = record.replicas[record.next++ % record.replicas.length]
      const events = replica.worker.invoke(replica.uid, operation, payload, signal)
      return record.healing ? trackAnswers(record.healing, events, signal) : events
    },
    modelName: record.modelName,
    modelType: record.modelType,
    uid,
  }
}

async function* invokeRelaunched(record: InstanceRecord, operation: string, payload: unknown, signal: AbortSignal): AsyncIterable<unknown> {
  await untilRelaunched(record, signal)
  yield* modelHandle(record).invoke(operation, payload, signal)
}
