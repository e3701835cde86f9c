/**
 * Puts every generating sequence into every decode batch, in sequence-id order: continuous batching as
 * llama.cpp's own server does it.
 *
 * node-llama-cpp, left alone, falls short twice. It decodes whatever is queued the moment a batch ends, while
 * the sequences of that batch are still sampling their tokens one after another, so the last to finish misses
 * the next batch: four streams settle into batches of three. And llama.cpp splits a batch for a non-unified
 * KV cache (node-llama-cpp always makes one) into micro-batches of consecutive sequence ids in batch order, so
 * sequences queued as 2, 3, 1 are computed as [2, 3] then [1], each pass reading all the weights again.
 * Measured on a 137M-parameter model, four streams on one thread: 59 tok/s as it was, 96 with the gatherer.
 *
 * It wraps the context's single entry point for decodes (`_decodeTokens`, private to node-llama-cpp): a
 * request waits while a batch is being computed and while sequences of that batch have not asked for their
 * next token yet; then all waiting requests go in at once, ordered by sequence id, and the batch starts at once
 * instead of on node-llama-cpp's next event-loop turn, ahead of the previous tokens' delivery. A sequence that does not
 * come back (its request ended) is waited for at most `stragglerMs`, or not at all once `settle` says so.
 * Requests too long for one batch (long prompts) are never waited for: other sequences keep generating
 * alongside them, in the batches node-llama-cpp fills.
 *
 * New requests join the next batch rather than the one after. Each request announces itself on arrival
 * (`arriving`), before its prompt is rendered and tokenized, and says which sequence it leased (`at`). A
 * batch waits, at most `arrivalMs`, for the first decodes of requests that have leased their sequence; an idle
 * model's first batch also waits for those still preparing. A lone request waits for nothing.
 */

interface DecodeRequest {
  sequenceId: number
  tokens: ArrayLike<unknown>
}

/** The part of node-llama-cpp's LlamaContext the gatherer relies on. */
export interface DecodingContext {
  readonly batchSize: number
  _decodeTokens(request: DecodeRequest, ...rest: unknown[]): Promise<unknown>
  dispatchPendingBatch(): void
}

export interface GathererTimers {
  set(callback: () => void, ms: number): unknown
  clear(handle: unknown): void
}

const realTimers: GathererTimers = {
  clear: (handle) => clearTimeout(handle as NodeJS.Timeout),
  set: (callback, ms) => setTimeout(callback, ms),
}

interface Waiting {
  sequenceId: number
  /** The first decode of an announced request. */
  arrived: boolean
  send(): void
}

/** A request announced by `arriving`, until its first decode (on the sequence it leased) or its release. */
export interface Arrival {
  /** The sequence the request leased: its first decode there ends the arrival. */
  at(sequenceId: number): void
  /** The request ended, or gave up, before its first decode. */
  release(): void
}

export class BatchGatherer {
  /**
   * Installs a gatherer on the context, or answers why it cannot (the private entry point is not there, as
   * after a node-llama-cpp upgrade that renamed it): the engine then works as before, only slower.
   */
  static install(context: object, options: {stragglerMs?: number; arrivalMs?: number; timers?: GathererTimers} = {}): BatchGatherer | string {
    const candidate = context as Partial<DecodingContext>
    if (typeof candidate._decodeTokens !== 'function' || typeof candidate.batchSize !== 'number' || typeof candidate.dispatchPendingBatch !== 'function')
      return 'this node-llama-cpp has no LlamaContext._decodeTokens or dispatchPendingBatch; decode batches are left as node-llama-cpp forms them'
    return new BatchGatherer(context as DecodingContext, options.stragglerMs ?? 1, options.arrivalMs ?? 5, options.timers ?? realTimers)
  }

  private waiting: Waiting[] = []
  /** Sequences whose single-batch request is being decoded. */
  private readonly inFlight = new Set<number>()
  /** Sequences whose request was decoded and that have not asked again yet. */
  private readonly returned = new Set<number>()
  /** Announced requests, by the sequence they leased once they have one. */
  private readonly arrivals = new Map<object, number | undefined>()
  private stragglerTimer: unknown
  private arrivalTimer: unknown
  private readonly decode: DecodingContext['_decodeTokens']

  private constructor(
    private readonly context: DecodingContext,
    private readonly stragglerMs: number,
    private readonly arrivalMs: number,
    private readonly timers: GathererTimers,
  ) {
    this.decode = context._decodeTokens
    context._decodeTokens = (request, ...rest) => this.enqueue(request, rest)
  }

  /** Announces a request that will soon ask for its first decode; see the class comment. */
  arriving(): Arrival {
    const key = {}
    this.arrivals.set(key, undefined)
    return {
      at: (sequenceId) => {
        if (this.arrivals.has(key)) this.arrivals.set(key, sequenceId)
      },
      release: () => {
        if (this.arrivals.delete(key)) this.check()
      },
    }
  }

  /** The sequence will not ask for another token soon (its request ended): the next batch need not wait for it. */
  settle(sequenceId: number): void {
    if (this.returned.delete(sequenceId)) this.check()
  }

  /** Puts node-llama-cpp's own entry point back, after sending whatever waits. */
  dispose(): void {
    this.flush()
    this.context._decodeTokens = this.decode
  }

  private enqueue(request: DecodeRequest, rest: unknown[]): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const {sequenceId} = request
      const singleBatch = request.tokens.length <= this.context.batchSize
      this.returned.delete(sequenceId)
      let arrived = false
      for (const [key, leased] of this.arrivals)
        if (leased === sequenceId) {
          this.arrivals.delete(key)
          arrived = true
        }

      this.waiting.push({
        arrived,
        send: () => {
          if (singleBatch) this.inFlight.add(sequenceId)
          this.decode.call(this.context, request, ...rest).then(
            (result) => {
              if (singleBatch) this.inFlight.delete(sequenceId)
              this.returned.add(sequenceId)
              resolve(result)
              this.check()
            },
            (error: unknown) => {
              if (singleBatch) this.inFlight.delete(sequenceId)
              reject(error)
              this.check()
            },
          )
        },
        sequenceId,
      })
      this.check()
    })
  }

  private check(): void {
    if (this.waiting.length === 0 || this.inFlight.size > 0) return
    if (this.returned.size > 0) this.stragglerTimer ??= this.timers.set(() => this.flush(), this.stragglerMs)
    else if (this.awaitsArrivals()) this.arrivalTimer ??= this.timers.set(() => this.flush(), this.arrivalMs)
    else this.flush()
  }

  /**
   * A request that has leased its sequence is about to ask (node-llama-cpp makes it wait for the batch in flight
   * first, to prepare the sequence's cache), so the next batch waits for it. One still preparing its prompt is
   * waited for only by an idle model's first batch.
   */
  private awaitsArrivals(): boolean {
    if (this.arrivals.size === 0) return false
    for (const sequenceId of this.arrivals.values()) if (sequenceId !== undefined) return true
    return this.waiting.every((request) => request.arrived)
  }

  private flush(): void {
    if (this.stragglerTimer !== undefined) this.timers.clear(this.stragglerTimer)
    if (this.arrivalTimer !== undefined) this.timers.clear(this.arrivalTimer)
    this.stragglerTimer = undefined
    this.arrivalTimer = undefined
    this.returned.clear()
    const batch = this.waiting.sort((a, b) => a.sequenceId - b.sequenceId)
    this.waiting = []
    for (const request of batch) request.send()
    if (batch.length > 0) this.context.dispatchPendingBatch()
  }
}
