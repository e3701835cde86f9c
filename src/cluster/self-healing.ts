/**
 * Self-healing: a model whose only process crashed after it was ready is relaunched on the same worker with the
 * same launch, after the backoff restart-policy.ts plans. While it relaunches its status is `restarting`, and
 * requests wait for it (up to the policy's wait) rather than fail at once; a terminate stops the relaunch.
 */
import {setTimeout as sleep} from 'node:timers/promises'

import type {Logger} from '../kernel/contracts.js'
import type {ModelState} from '../kernel/observability.js'
import type {InstanceRecord, Replica} from './model-table.js'

import {ServiceError} from '../kernel/errors.js'
import {planRestart, type RestartHistory, type RestartPolicy} from './restart-policy.js'

/** A model's self-healing so far, kept on its record. */
export interface Healing {
  /** Relaunches begun since the model was launched. */
  restarts: number
  /** Crashes in a row without the model staying up, and when it last became ready again. */
  inARow: number
  lastReadyAt?: number
  /** Whether a request to the model failed, and whether one was answered in full, since it last became ready (see `trackAnswers`). */
  requestFailed?: boolean
  answered?: boolean
  lastError?: string
  /** Aborted by a terminate: the backoff or the relaunch in progress stops. */
  controller?: AbortController
  /** Settles when the relaunch in progress is over (ready, or failed for good). */
  settled?: Promise<void>
  waitMs: number
  /**
   * Relaunches of single replicas of a model with several, which keeps serving meanwhile: aborted by a terminate.
   * `away`: the replicas out of the rotation until relaunched, which keep their GPUs meanwhile.
   */
  replicas?: {controller: AbortController; running: Set<Promise<void>>; inARow: Map<string, RestartHistory>; away: Set<Replica>}
}

/** A model's replicas that hold its workers' GPUs: those in the rotation, and those being relaunched on theirs. */
export const replicasHoldingGpus = (record: InstanceRecord): Replica[] => [...record.replicas, ...(record.healing?.replicas?.away ?? [])]

export interface ModelHealerOptions {
  policy: RestartPolicy
  log: Logger
  changed(record: InstanceRecord, state: ModelState, reason?: string, details?: Record<string, unknown>): void
  /** Milliseconds since the epoch. */
  now?: () => number
  wait?: (ms: number, signal: AbortSignal) => Promise<void>
}

export class ModelHealer {
  private readonly now: () => number
  private readonly wait: (ms: number, signal: AbortSignal) => Promise<void>

  constructor(private readonly options: ModelHealerOptions) {
    this.now = options.now ?? Date.now
    this.wait = options.wait ?? ((ms, signal) => sleep(ms, undefined, {signal}))
  }

  /** A model just failed because its process crashed: relaunches it when the policy allows. */
  crashed(record: InstanceRecord, error: ServiceError): void {
    const healing = healingOf(record, this.options.policy)
    healing.lastError = error.message
    if (record.replicas.length !== 1 || !record.replicas[0].launch) return
    const controller = new AbortController()
    healing.controller = controller
    healing.settled = this.heal(record, healing, controller.signal).finally(() => {
      if (healing.controller === controller) healing.controller = undefined
    })
  }

  /** What happens next to a model whose process just crashed, said to whoever meets the crash. */
  outlook(record: InstanceRecord): string {
    const {policy} = this.options
    const healing = healingOf(record, policy)
    const decision = planRestart(policy, healing, this.now())
    if (!record.replicas[0]?.launch) return 'terminate it and launch it again.'
    if ('giveUp' in decision) return `it stays failed, as ${decision.giveUp}: terminate it and launch it again.`
    return `the service relaunches it in ${decision.delayMs / 1000} s (attempt ${decision.attempt} of ${policy.attempts} in a row), and requests wait for it up to ${policy.waitMs / 1000} s.`
  }

  /**
   * One replica of a model with several crashed: it left the rotation and the others serve, while it is relaunched on
   * its worker with the same backoff and limit as a whole model; once ready it rejoins the rotation.
   */
  replicaCrashed(record: InstanceRecord, replica: Replica, error: ServiceError): void {
    const healing = healingOf(record, this.options.policy)
    healing.lastError = error.message
    if (!replica.launch) return
    healing.replicas ??= {away: new Set(), controller: new AbortController(), inARow: new Map(), running: new Set()}
    const {replicas} = healing
    replicas.away.add(replica)
    const relaunch = this.healReplica(record, replica, healing, replicas.controller.signal).finally(() => {
      replicas.running.delete(relaunch)
      replicas.away.delete(replica)
    })
    replicas.running.add(relaunch)
  }

  /** Stops the relaunch of a model being terminated; answers once nothing of it runs. */
  async stop(record: InstanceRecord): Promise<void> {
    const reason = new ServiceError(499, 'request_aborted', `model ${record.uid} was terminated while it was being relaunched.`)
    record.healing?.controller?.abort(reason)
    record.healing?.replicas?.controller.abort(reason)
    await Promise.all([record.healing?.settled, ...(record.healing?.replicas?.running ?? [])])
  }

  private async healReplica(record: InstanceRecord, replica: Replica, healing: Healing, signal: AbortSignal): Promise<void> {
    const {log, policy} = this.options
    const history = healing.replicas!.inARow
    for (;;) {
      const decision = planRestart(policy, history.get(replica.uid) ?? {inARow: 0}, this.now())
      if ('giveUp' in decision) {
        if (policy.attempts > 0) log.error(`replica ${replica.uid} of model ${record.uid} stays out of the rotation: ${decision.giveUp}; last error: ${healing.lastError}`)
        return
      }

      history.set(replica.uid, {...history.get(replica.uid), inARow: decision.attempt})
      healing.restarts++
      log.warn(`replica ${replica.uid} of model ${record.uid} crashed; the other replicas serve, and it is relaunched in ${decision.delayMs} ms (attempt ${decision.attempt} of ${policy.attempts} in a row)`)
      this.options.changed(record, 'restarting', healing.lastError, {attempt: decision.attempt, delay_ms: decision.delayMs, replica: replica.uid, restarts: healing.restarts})
      try {
        await this.wait(decision.delayMs, signal)
        await replica.worker.terminate(replica.uid).catch(() => {})
        const summary = await replica.worker.launch(replica.launch!, {signal})
        replica.pid = summary.pid
        history.set(replica.uid, {inARow: decision.attempt, lastReadyAt: this.now()})
        record.replicas = [...record.replicas, replica].sort((a, b) => a.uid.localeCompare(b.uid))
        log.info(`replica ${replica.uid} of model ${record.uid} is back in the rotation (pid ${summary.pid})`)
        this.options.changed(record, 'ready')
        return
      } catch (error) {
        if (signal.aborted) return
        healing.lastError = `relaunch of replica ${replica.uid} failed: ${(error as Error).message}`
        log.warn(healing.lastError)
      }
    }
  }

  private async heal(record: InstanceRecord, healing: Healing, signal: AbortSignal): Promise<void> {
    const [replica] = record.replicas
    const {log} = this.options
    for (;;) {
      const decision = planRestart(this.options.policy, healing, this.now())
      if ('giveUp' in decision) {
        if (this.options.policy.attempts > 0) log.error(`model ${record.uid} stays failed: ${decision.giveUp}; last error: ${healing.lastError}`)
        record.status = 'error'
        record.error ??= new ServiceError(503, 'model_crashed', `model ${record.uid} crashed: ${healing.lastError}`)
        return
      }

      healing.inARow = decision.attempt
      healing.restarts++
      record.status = 'restarting'
      log.warn(`model ${record.uid} crashed; relaunching it in ${decision.delayMs} ms (attempt ${decision.attempt} of ${this.options.policy.attempts} in a row)`)
      this.options.changed(record, 'restarting', healing.lastError, {attempt: decision.attempt, delay_ms: decision.delayMs, restarts: healing.restarts})
      try {
        await this.wait(decision.delayMs, signal)
        // The crashed process leaves the worker first, so the uid is free for its successor.
        await replica.worker.terminate(replica.uid).catch(() => {})
        const summary = await replica.worker.launch(replica.launch!, {signal})
        replica.pid = summary.pid
        record.status = 'ready'
        record.error = undefined
        record.progress = {...record.progress, error: null, progress: 1, stage: 'ready'}
        healing.lastReadyAt = this.now()
        healing.answered = false
        healing.requestFailed = false
        log.info(`model ${record.uid} is ready again (pid ${summary.pid})`)
        this.options.changed(record, 'ready')
        return
      } catch (error) {
        if (signal.aborted) return
        const reason = (error as Error).message
        healing.lastError = `relaunch failed: ${reason}`
        record.status = 'error'
        record.error = new ServiceError(503, 'model_crashed', `model ${record.uid} crashed and its relaunch failed: ${reason}`)
        this.options.changed(record, 'error', healing.lastError)
      }
    }
  }
}

/**
 * A relaunched model's requests, noting on its healing whether each was answered or failed: one that is ready, fails
 * every request (a server whose engine dies on its first) and is relaunched each time must not count as stable.
 */
export async function* trackAnswers(healing: Healing, events: AsyncIterable<unknown>, signal: AbortSignal): AsyncIterable<unknown> {
  try {
    yield* events
    healing.answered = true
  } catch (error) {
    if (!signal.aborted) healing.requestFailed = true
    throw error
  }
}

export function healingOf(record: InstanceRecord, policy: RestartPolicy): Healing {
  record.healing ??= {inARow: 0, restarts: 0, waitMs: policy.waitMs}
  return record.healing
}

/**
 * A request to a model being relaunched waits until the relaunch is over, up to the policy's wait; then it runs,
 * or gets a 503 that says the model is restarting (or why it failed for good).
 */
export async function untilRelaunched(record: InstanceRecord, signal: AbortSignal): Promise<void> {
  const healing = record.healing!
  const over = new AbortController()
  try {
    await Promise.race([healing.settled, sleep(healing.waitMs, undefined, {signal: AbortSignal.any([signal, over.signal])}).catch(() => {})])
  } finally {
    over.abort()
  }

  if (signal.aborted) throw signal.reason
  if (record.status === 'restarting')
    throw new ServiceError(503, 'model_restarting', `model ${record.uid} crashed and is being relaunched (restart ${healing.restarts}); retry shortly. Last error: ${healing.lastError}`)
}
