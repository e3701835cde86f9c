/**
 * Where a launch's replicas run, as pure functions of what the workers report (their status: address, memory
 * and devices) and of the memory the launch needs, both handed in: placement runs no process and reads no
 * machine, so its choices are tested on their own.
 */
import type {WorkerStatus} from '../protocol/worker.js'

import {badRequest, ServiceError} from '../kernel/errors.js'

/** A worker as placement sees it: its reported status, and how many models it runs. */
export interface PlacementCandidate<W> {
  worker: W
  status: WorkerStatus
  models: number
}

const GIB = 1024 ** 3
const gib = (bytes: number) => `${(bytes / GIB).toFixed(1)} GiB`

/** The 503 for a launch when no worker answers, naming the lost ones. */
export function noWorkerError(lost: string[]): ServiceError {
  return new ServiceError(503, 'overloaded', `no worker is available${lost.length > 0 ? ` (lost: ${lost.join(', ')})` : ''}; start one with \`service-worker -e <supervisor endpoint> -H <worker host>\`.`)
}

/** `worker_ip` as Xinference clients send it: a worker's id, address, or the host part of its address. */
export function matchesWorker(status: WorkerStatus, workerIp: string): boolean {
  if (status.id === workerIp || status.address === workerIp) return true
  try {
    return status.address !== null && new URL(status.address).hostname === workerIp
  } catch {
    return false
  }
}

/** The workers a launch may go to: those that answer (`ready`, in a stable order), narrowed to the one `worker_ip` names. */
export function namedCandidates<W>(ready: Array<PlacementCandidate<W>>, workerIp: string | undefined): Array<PlacementCandidate<W>> {
  const named = workerIp ? ready.filter((candidate) => matchesWorker(candidate.status, workerIp)) : ready
  if (named.length === 0)
    throw badRequest(`worker_ip ${workerIp} names no worker that answers; workers: ${ready.map(({status}) => `${status.id} (${status.address ?? 'local'})`).join(', ')}.`, 'worker_ip')
  return named
}

/**
 * How many replicas needing `need` bytes each fit in each candidate's free memory, all of them when `need` is
 * undefined (no estimate: nothing to check).
 */
function replicaRoom<W>(candidates: Array<PlacementCandidate<W>>, need: number | undefined, replicas: number): number[] {
  return candidates.map(({status}) => (need === undefined || need <= 0 ? replicas : Math.floor(status.resources.memory_free_bytes / need)))
}

/**
 * Chooses a worker for each replica: among the candidates, the ones with the memory the model needs free
 * (`need` undefined: no check), then the fewest replicas of this model, the fewest models, and the most memory
 * free. Replicas placed on one worker add up: a worker takes only as many as its free memory holds, so a launch
 * whose replicas cannot all be placed is refused whole, before any of them starts, with what each worker has room for.
 */
export function chooseWorkers<W>(candidates: Array<PlacementCandidate<W>>, need: number | undefined, replicas: number, uid: string): W[] {
  const free = (candidate: PlacementCandidate<W>) => candidate.status.resources.memory_free_bytes
  const rooms = replicaRoom(candidates, need, replicas)
  const room = new Map(candidates.map((candidate, index) => [candidate, rooms[index]]))
  const fits = candidates.filter((candidate) => room.get(candidate)! > 0)
  if (fits.length === 0)
    throw new ServiceError(
      503,
      'overloaded',
      `no worker has the ${gib(need!)} ${uid} needs: ${candidates.map((c) => `${c.status.id} has ${gib(free(c))} free`).join('; ')}. Terminate a model, or launch with a smaller n_ctx or quantization.`,
    )
  const total = fits.reduce((sum, candidate) => sum + room.get(candidate)!, 0)
  if (total < replicas)
    throw new ServiceError(
      503,
      'overloaded',
      `replica ${replicas} of ${uid} needs ${gib(need! * replicas)} (${gib(need!)} each), but the workers have room for ${total}: ${candidates.map((c) => `${c.status.id} has ${gib(free(c))} free, room for ${room.get(c)}`).join('; ')}. Launch at most ${total} replicas, or terminate a model.`,
      'replica',
    )
  const load = new Map(fits.map((candidate) => [candidate, candidate.models]))
  const chosen: Array<PlacementCandidate<W>> = []
  const mine = (candidate: PlacementCandidate<W>) => chosen.filter((c) => c === candidate).length
  for (let i = 0; i < replicas; i++) {
    // Replicas of this model spread first, so a lost worker takes as few of them as possible.
    const [best] = [...load.keys()].filter((c) => mine(c) < room.get(c)!).sort((a, b) => mine(a) - mine(b) || load.get(a)! - load.get(b)! || free(b) - free(a))
    chosen.push(best)
    load.set(best, load.get(best)! + 1)
  }

  return chosen.map((candidate) => candidate.worker)
}
