/**
 * A restarted supervisor's desired models. Workers that kept running rejoin with their models, which the supervisor
 * re-adopts as they were (same processes, same replicas: see WorkerMembership). Once every live worker has had the
 * time to rejoin (the lost timeout, after which a silent worker would count as lost anyway) and one is ready, each
 * desired model that no worker brought back is relaunched as a new launch with its replicas, placed as any launch
 * is. A worker that rejoins later still with a copy finds the model running, and its copy is stopped as surplus.
 */
import {setTimeout as sleep} from 'node:timers/promises'

import type {Logger} from '../kernel/contracts.js'
import type {LaunchRequest} from '../protocol/launch.js'
import type {DesiredModels} from './desired-models.js'

export interface ClusterModels {
  /** Uids of the models in the table (re-adopted, launching or running). */
  running(): string[]
  /** Whether any worker answers, so a launch can be placed. */
  anyWorkerReady(): boolean
  launch(request: LaunchRequest): Promise<unknown>
}

const WORKER_POLL_MS = 500

export async function restoreClusterModels(desired: DesiredModels, cluster: ClusterModels, {graceMs, log, signal}: {graceMs: number; log: Logger; signal: AbortSignal}): Promise<void> {
  const models = desired.list()
  if (models.length === 0) return
  log.info(`waiting ${graceMs / 1000} s for workers to rejoin with the ${models.length} desired model(s) before relaunching those none brings back`)
  try {
    await sleep(graceMs, undefined, {signal})
    while (!cluster.anyWorkerReady()) await sleep(WORKER_POLL_MS, undefined, {signal})
  } catch {
    return
  }

  for (const model of models) {
    const uid = model.launch.model_uid
    if (signal.aborted) return
    if (cluster.running().includes(uid)) {
      log.info(`desired model ${uid} was brought back by its worker (re-adopted, not relaunched)`)
      continue
    }

    try {
      log.info(`relaunching desired model ${uid}: no worker brought it back`)
      await cluster.launch(model.launch)
      log.info(`relaunched ${uid}`)
    } catch (error) {
      log.error(`could not relaunch ${uid}: ${(error as Error).message}`)
      desired.failed(uid, (error as Error).message)
    }
  }
}
