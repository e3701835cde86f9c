/**
 * A fixed set of context sequences shared by all requests to one model: a request leases a free sequence
 * and returns it when done, so up to N requests are evaluated together in each batch and the rest wait in
 * order. A leased sequence keeps its evaluated tokens, so the next request sharing a prefix skips them.
 */
export class SequencePool<T> {
  private readonly free: T[]
  private readonly waiting: Array<{resolve(slot: T): void; reject(error: unknown): void; signal?: AbortSignal; onAbort(): void}> = []

  constructor(slots: T[]) {
    this.free = [...slots]
  }

  acquire(signal?: AbortSignal): Promise<T> {
    const slot = this.free.shift()
    if (slot !== undefined) return Promise.resolve(slot)
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
      this.free.push(slot)
      return
    }

    next.signal?.removeEventListener('abort', next.onAbort)
    next.resolve(slot)
  }
}
