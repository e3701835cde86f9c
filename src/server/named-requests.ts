/**
 * Requests their caller named with a `request_id` in the body, as Xinference's clients do, so that the caller can stop
 * one (`POST /v1/models/{uid}/requests/{id}/abort`) or ask how far it is (`GET /v1/requests/{id}/progress`). The
 * app registers every such request while it runs, whatever its route; an aborted id stays blocked for the time the
 * abort asks, so a request arriving after its abort (Xinference's block_duration) is refused rather than run.
 */
import {ServiceError} from '../kernel/errors.js'

/**
 * How many finished requests are remembered for their progress, and blocked ids for their block: the newest are
 * kept, the oldest forgotten past these, so that no caller can grow either without bound.
 */
const KEPT = {blocked: 10_000, finished: 1000}

interface Running {
  model: string
  stop: (reason: ServiceError) => void
}

export type AbortOutcome = 'DONE' | 'NOT_FOUND'

export class NamedRequests {
  constructor(private readonly kept = KEPT) {}

  private readonly running = new Map<string, Running>()
  private readonly finished = new Set<string>()
  /** Request id → until when (ms since the epoch) a request of that id is refused. */
  private readonly blocked = new Map<string, number>()

  /**
   * Enters a request as running; the answer ends its entry. A request of an id already running, or aborted and
   * still blocked, is refused with a 409 naming the id.
   */
  enter(requestId: string, model: string, stop: (reason: ServiceError) => void): () => void {
    const until = this.blocked.get(requestId)
    if (until !== undefined && until > Date.now())
      throw new ServiceError(409, 'conflict', `request "${requestId}" was aborted and its id is blocked for ${Math.ceil((until - Date.now()) / 1000)} s more; send it with another request_id.`, 'request_id')
    if (this.running.has(requestId)) throw new ServiceError(409, 'conflict', `a request with request_id "${requestId}" is already running; give each request an id of its own.`, 'request_id')
    this.running.set(requestId, {model, stop})
    return () => {
      if (!this.running.delete(requestId)) return
      this.finished.delete(requestId)
      this.finished.add(requestId)
      if (this.finished.size > this.kept.finished) this.finished.delete(this.finished.values().next().value!)
    }
  }

  /** Stops the request of that id sent to that model, if it runs, and blocks the id for `blockSeconds`. */
  abort(model: string, requestId: string, blockSeconds: number): AbortOutcome {
    for (const [id, until] of this.blocked) if (until <= Date.now()) this.blocked.delete(id)
    if (blockSeconds > 0) {
      this.blocked.delete(requestId)
      this.blocked.set(requestId, Date.now() + blockSeconds * 1000)
      if (this.blocked.size > this.kept.blocked) this.blocked.delete(this.blocked.keys().next().value!)
    }

    const request = this.running.get(requestId)
    if (!request || request.model !== model) return 'NOT_FOUND'
    request.stop(new ServiceError(499, 'request_aborted', `request "${requestId}" was aborted by POST /v1/models/${model}/requests/${requestId}/abort.`))
    return 'DONE'
  }

  /** 0 while the request runs, 1 once it has finished; undefined for an id never seen (or long forgotten). */
  progress(requestId: string): number | undefined {
    if (this.running.has(requestId)) return 0
    return this.finished.has(requestId) ? 1 : undefined
  }
}
