/**
 * A fixed set of context sequences shared by all requests to one model: a request leases a free sequence
 * and returns it when done, so up to N requests are evaluated together in each batch and the rest wait in
 * order. A leased sequence keeps its evaluated tokens, so the next request sharing a prefix skips them:
 * a request is given the free sequence its `affinity` scores highest (the one holding most of its prompt),
 * and among equals the first in the pool's order. Keeping the busy sequences at the front matters: llama.cpp
 * computes a batch in one pass only for consecutive sequence ids (see batch-gatherer.ts).
 */
export class SequencePool<T> {
  private readonly order: Map<T, number>
  private readonly free: T[]
  private readonly waiting: Array<{resolve(slot: T): void; reject(error: unknown): void; signal?: AbortSignal; onAbort(): void}> = []

  constructor(slots: T[]) {
    this.free = [...slots]
    this.order = new Map(slots.map((slot, index) => [slot, index]))
  }

  /** Sequences leased and requests waiting for one, as the model's usage reports them. */
  usage(): {sequencesTotal: number; sequencesInUse: number; requestsWaiting: number} {
    return {requestsWaiting: this.waiting.length, sequencesInUse: this.order.size - this.free.length, sequencesTotal: this.order.size}
  }

  acquire(signal?: AbortSignal, affinity?: (slot: T) => number): Promise<T> {
    if (this.free.length > 0) {
      let best = 0
      if (affinity) {
        let bestScore = -1
        for (const [index, slot] of this.free.entries()) {
          const score = affinity(slot)
          if (score > bestScore) [best, bestScore] = [index, score]
        }
      }

      return Promise.resolve(this.free.splice(best, 1)[0])
    }

    // A request whose client left before it asked (during its grammar's compilation, say) does not queue.
    if (signal?.aborted) return Promise.reject(signal.reason)
    return new Promise((resolve, reject) => {
      const waiter = {
        onAbort: () => {
          this.waiting.splice(this.waiting.indexOf(waiter), 1)
          reject(signal!.reason)
        },
        reject,
        resolve,
        signal,
      }
      signal?.addEventListener('abort', waiter.onAbort, {once: true})
      this.waiting.push(waiter)
    })
  }

  release(slot: T): void {
    const next = this.waiting.shift()
    if (!next) {
      const position = this.free.findIndex((free) => this.order.get(free)! > this.order.get(slot)!)
      this.free.splice(position < 0 ? this.free.length : position, 0, slot)
      return
    }

    next.signal?.removeEventListener('abort', next.onAbort)
    next.resolve(slot)
  }
}
