/**
 * Dynamic batching in a model's process: requests wait in a queue while the session runs (ONNX Runtime's run holds
 * the process's main thread, so requests arriving meanwhile pile up in the IPC channel), and each run takes the
 * oldest waiting request with every other waiting one whose dims past the first are the same, up to `maxBatchSize`
 * rows. With no queue delay a run takes what is waiting when the event loop comes round (never holding a lone
 * request); with one, the oldest request waits up to that long for others to fill the batch. A request whose rows
 * cannot be stacked (rowShapeOf: no key) or that alone has more rows than a batch runs alone. An aborted request
 * leaves the queue at once; one aborted during its batch's run has its rows dropped by its caller. A batch whose run
 * fails runs again one request at a time, so a request never fails for its batch-mates.
 */
import type {RowShape} from './batch-rows.js'

export interface BatcherTimers {
  now(): number
  /** Runs `callback` after the current event-loop turn (delayMs 0), or after `delayMs`. */
  later(callback: () => void, delayMs: number): void
}

const realTimers: BatcherTimers = {
  later: (callback, delayMs) => (delayMs <= 0 ? setImmediate(callback) : setTimeout(callback, delayMs)),
  now: () => performance.now(),
}

export interface BatcherOptions<Item, Result> {
  maxBatchSize: number
  maxQueueDelayMs: number
  /** Runs the items as one batch; answers each item's result, in order. */
  run(items: Item[]): Promise<Result[]>
  timers?: BatcherTimers
}

interface Waiting<Item, Result> {
  item: Item
  shape: RowShape | undefined
  arrivedAt: number
  resolve(result: Result): void
  reject(error: unknown): void
  forget(): void
}

export class DynamicBatcher<Item, Result> {
  private readonly waiting: Array<Waiting<Item, Result>> = []
  private running = false
  /** Whether a run is due after this event-loop turn, or after the oldest request's queue delay. */
  private scheduled: 'later' | 'now' | undefined
  /** Which scheduled run is current: one scheduled sooner turns those before it stale. */
  private generation = 0
  private readonly timers: BatcherTimers

  constructor(private readonly options: BatcherOptions<Item, Result>) {
    this.timers = options.timers ?? realTimers
  }

  /** Queues one request's item; resolves with its share of its batch's run. */
  submit(item: Item, shape: RowShape | undefined, signal: AbortSignal): Promise<Result> {
    signal.throwIfAborted()
    return new Promise<Result>((resolve, reject) => {
      const onAbort = () => {
        const index = this.waiting.indexOf(entry)
        if (index === -1) return
        this.waiting.splice(index, 1)
        reject(signal.reason)
      }

      const entry: Waiting<Item, Result> = {
        arrivedAt: this.timers.now(),
        forget: () => signal.removeEventListener('abort', onAbort),
        item,
        reject,
        resolve,
        shape,
      }
      signal.addEventListener('abort', onAbort, {once: true})
      this.waiting.push(entry)
      this.schedule()
    })
  }

  private schedule(): void {
    if (this.running || this.waiting.length === 0 || this.scheduled === 'now') return
    const [batch, rows] = this.gather()
    // Nothing more can join a batch that is full, that runs alone, or that leaves waiting requests it cannot take.
    const full = rows >= this.options.maxBatchSize || this.waiting[0].shape === undefined || batch.length < this.waiting.length
    const delay = full ? 0 : Math.max(0, this.options.maxQueueDelayMs - (this.timers.now() - this.waiting[0].arrivedAt))
    if (delay > 0 && this.scheduled === 'later') return
    // A batch filled while its oldest request waited runs now; the timer set for it finds itself stale.
    const generation = ++this.generation
    this.scheduled = delay > 0 ? 'later' : 'now'
    this.timers.later(() => {
      if (generation !== this.generation) return
      this.scheduled = undefined
      void this.runNext()
    }, delay)
  }

  /** The oldest waiting request and those that can join it, in arrival order, and their rows. */
  private gather(): [Array<Waiting<Item, Result>>, number] {
    const [head] = this.waiting
    const batch = [head]
    let rows = head.shape?.rows ?? 0
    if (head.shape === undefined || rows >= this.options.maxBatchSize) return [batch, rows]
    for (const other of this.waiting.slice(1)) {
      if (other.shape?.key !== head.shape.key || rows + other.shape.rows > this.options.maxBatchSize) continue
      batch.push(other)
      rows += other.shape.rows
    }

    return [batch, rows]
  }

  private async runNext(): Promise<void> {
    if (this.running || this.waiting.length === 0) return
    const [batch] = this.gather()
    for (const entry of batch) {
      this.waiting.splice(this.waiting.indexOf(entry), 1)
      entry.forget()
    }

    this.running = true
    try {
      const results = await this.options.run(batch.map(({item}) => item))
      for (const [index, entry] of batch.entries()) entry.resolve(results[index])
    } catch (error) {
      if (batch.length === 1) batch[0].reject(error)
      // A request that passed its checks can still fail the run (an index out of range for a Gather): each runs
      // alone again, so that only the one at fault fails.
      else for (const entry of batch) await this.options.run([entry.item]).then(([result]) => entry.resolve(result), entry.reject)
    } finally {
      this.running = false
      this.schedule()
    }
  }
}
