/**
 * Owns the decode batches of a context: every generating sequence goes into every batch, in sequence-id order,
 * and each batch is built and started here, as llama.cpp's own server does it.
 *
 * node-llama-cpp, left alone, falls short three times. It decodes whatever is queued the moment a batch ends,
 * while the sequences of that batch are still sampling their tokens one after another, so the last to finish
 * misses the next batch: four streams settle into batches of three. llama.cpp splits a batch for a non-unified
 * KV cache (node-llama-cpp always makes one) into micro-batches of consecutive sequence ids in batch order, so
 * sequences queued as 2, 3, 1 are computed as [2, 3] then [1], each pass reading all the weights again. And its
 * dispatch (scheduling, prioritization, thread reservation, several promise layers) costs about 0.05 ms of the
 * main thread per batch: a tenth of a token's time on a 4M-parameter model.
 *
 * It replaces the context's single entry point for decodes (`_decodeTokens`, private to node-llama-cpp) and
 * drives the native batch calls itself, under the context's lock, which node-llama-cpp's cache edits also take.
 * A request waits while a batch is being computed and while sequences of that batch have not asked for their
 * next token yet; then all waiting requests go in at once, ordered by sequence id. A sequence that does not come
 * back (its request ended) is waited for at most `stragglerMs`, or not at all once `settle` says so. A prompt
 * longer than the room left in a batch is decoded over several batches, alongside the generating sequences,
 * which each get their token first.
 *
 * New requests join the next batch rather than the one after. Each request announces itself on arrival
 * (`arriving`), before its prompt is rendered and tokenized, and says which sequence it leased (`at`). A
 * batch waits, at most `arrivalMs`, for the first decodes of requests that have leased their sequence; an idle
 * model's first batch also waits for those still preparing. A lone request waits for nothing.
 */

/** A token meter as node-llama-cpp passes it: one, several, or none. */
interface Meter {
  useTokens(tokens: number, type: 'input' | 'output'): void
}

/** A decode as node-llama-cpp's sequences ask for it. */
export interface DecodeRequest {
  sequenceId: number
  /** Where the first token goes in the sequence's state. */
  firstTokenSequenceIndex: number
  tokens: ArrayLike<number>
  /** Which tokens need logits (those sampled from). */
  logits: ArrayLike<boolean | undefined>
  tokenMeter?: Meter | Meter[]
  afterBatchAction?(sequenceStateLength: number): unknown
}

/** Turns the logits of one token into what its requester wants (usually a sampled token). */
export type LogitMapper = (batchLogitIndex: number, sequenceTokenIndex: number) => unknown

/** node-llama-cpp's native context calls that build and compute a batch. */
export interface NativeBatch {
  initBatch(size: number): void
  addToBatch(sequenceId: number, firstTokenSequenceIndex: number, tokens: Uint32Array, logitIndexes: Uint32Array): Uint32Array
  decodeBatch(): Promise<void>
}

/** The part of node-llama-cpp's LlamaContext the gatherer relies on. */
export interface DecodingContext {
  readonly batchSize: number
  _ctx: NativeBatch
  _decodeTokens(request: DecodeRequest, mapLogits: LogitMapper): Promise<Array<[number, unknown]>>
  /** Keeps the native context alive while a batch is computed. */
  _backendContextDisposeGuard?: {createPreventDisposalHandle(): {dispose(): void}}
}

export interface GathererTimers {
  set(callback: () => void, ms: number): unknown
  clear(handle: unknown): void
}

/** Runs one batch while node-llama-cpp's sequences cannot edit the context's cache. */
export type ContextLock = <T>(run: () => Promise<T>) => Promise<T>

const realTimers: GathererTimers = {
  clear: (handle) => clearTimeout(handle as NodeJS.Timeout),
  set: (callback, ms) => setTimeout(callback, ms),
}

interface Waiting {
  request: DecodeRequest
  mapLogits: LogitMapper
  /** Tokens of the request already decoded, in earlier batches. */
  done: number
  results: Array<[number, unknown]>
  /** The first decode of an announced request. */
  arrived: boolean
  resolve(results: Array<[number, unknown]>): void
  reject(error: unknown): void
}

/** A request announced by `arriving`, until its first decode (on the sequence it leased) or its release. */
export interface Arrival {
  /** The sequence the request leased: its first decode there ends the arrival. */
  at(sequenceId: number): void
  /** The request ended, or gave up, before its first decode. */
  release(): void
}

function meter(meters: Meter | Meter[] | undefined, tokens: number, type: 'input' | 'output') {
  if (tokens === 0 || !meters) return
  for (const one of Array.isArray(meters) ? meters : [meters]) one.useTokens(tokens, type)
}

/**
 * How many tokens of each waiting request fit in a batch of `room`: the shortest first, each at most an
 * equal share of the room left, so a generating sequence's single token is never crowded out by a prompt.
 */
export function shareBatch(remaining: readonly number[], room: number): number[] {
  const order = remaining.map((_, index) => index).sort((a, b) => remaining[a] - remaining[b])
  const shares = remaining.map(() => 0)
  for (const [position, index] of order.entries()) {
    const share = Math.max(1, Math.floor(room / (order.length - position)))
    shares[index] = Math.min(remaining[index], share, room)
    room -= shares[index]
  }

  return shares
}

export class BatchGatherer {
  /**
   * Installs a gatherer on the context, or answers why it cannot (the private entry points are not there, as
   * after a node-llama-cpp upgrade that renamed them): the engine then works as before, only slower.
   */
  static install(
    context: object,
    options: {stragglerMs?: number; arrivalMs?: number; timers?: GathererTimers; lock?: ContextLock} = {},
  ): BatchGatherer | string {
    const candidate = context as Partial<DecodingContext>
    const native = candidate._ctx as Partial<NativeBatch> | undefined
    if (
      typeof candidate._decodeTokens !== 'function' ||
      typeof candidate.batchSize !== 'number' ||
      typeof native?.initBatch !== 'function' ||
      typeof native.addToBatch !== 'function' ||
      typeof native.decodeBatch !== 'function'
    )
      return 'this node-llama-cpp has no LlamaContext._decodeTokens or native batch calls; decode batches are left as node-llama-cpp forms them'
    return new BatchGatherer(context as DecodingContext, options.stragglerMs ?? 1, options.arrivalMs ?? 5, options.timers ?? realTimers, options.lock ?? ((run) => run()))
  }

  private waiting: Waiting[] = []
  /** A batch is being built, computed or mapped. */
  private running = false
  /** Sequences whose request was decoded and that have not asked again yet. */
  private readonly returned = new Set<number>()
  /** Announced requests, by the sequence they leased once they have one. */
  private readonly arrivals = new Map<object, number | undefined>()
  private stragglerTimer: unknown
  private arrivalTimer: unknown
  private readonly original: DecodingContext['_decodeTokens']

  private constructor(
    private readonly context: DecodingContext,
    private readonly stragglerMs: number,
    private readonly arrivalMs: number,
    private readonly timers: GathererTimers,
    private readonly lock: ContextLock,
  ) {
    this.original = context._decodeTokens
    context._decodeTokens = (request, mapLogits) => this.enqueue(request, mapLogits)
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

  /** Puts node-llama-cpp's own entry point back; requests still waiting fail, as the context is going away. */
  dispose(): void {
    this.clearTimers()
    this.context._decodeTokens = this.original
    const waiting = this.waiting
    this.waiting = []
    for (const request of waiting) request.reject(new Error('the model is being unloaded'))
  }

  private enqueue(request: DecodeRequest, mapLogits: LogitMapper): Promise<Array<[number, unknown]>> {
    return new Promise((resolve, reject) => {
      const {sequenceId} = request
      this.returned.delete(sequenceId)
      let arrived = false
      for (const [key, leased] of this.arrivals)
        if (leased === sequenceId) {
          this.arrivals.delete(key)
          arrived = true
        }

      this.waiting.push({arrived, done: 0, mapLogits, reject, request, resolve, results: []})
      this.check()
    })
  }

  private check(): void {
    if (this.waiting.length === 0 || this.running) return
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

  private clearTimers(): void {
    if (this.stragglerTimer !== undefined) this.timers.clear(this.stragglerTimer)
    if (this.arrivalTimer !== undefined) this.timers.clear(this.arrivalTimer)
    this.stragglerTimer = undefined
    this.arrivalTimer = undefined
  }

  private flush(): void {
    this.clearTimers()
    if (this.running || this.waiting.length === 0) return
    this.returned.clear()
    this.running = true
    this.lock(() => this.decodeBatch()).then(
      () => {
        this.running = false
        this.check()
      },
      (error: unknown) => {
        this.running = false
        this.fail([...this.waiting], error)
        this.check()
      },
    )
  }

  private fail(requests: Waiting[], error: unknown): void {
    for (const request of requests) {
      const index = this.waiting.indexOf(request)
      if (index < 0) continue
      this.waiting.splice(index, 1)
      request.reject(error)
    }
  }

  /** Builds one batch from the waiting requests, computes it, and hands each request its logits' values. */
  private async decodeBatch(): Promise<void> {
    // A copy: a request that fails is taken out of `this.waiting` while this batch is built.
    const waiting = [...this.waiting.sort((a, b) => a.request.sequenceId - b.request.sequenceId)]
    const shares = shareBatch(
      waiting.map(({done, request}) => request.tokens.length - done),
      this.context.batchSize,
    )
    const native = this.context._ctx
    const guard = this.context._backendContextDisposeGuard?.createPreventDisposalHandle()
    try {
      const parts: Array<{waiting: Waiting; count: number; logitTokens: number[]; batchLogitIndexes: Uint32Array}> = []
      const total = shares.reduce((sum, share) => sum + share, 0)
      native.initBatch(total)
      for (const [index, entry] of waiting.entries()) {
        const count = shares[index]
        if (count === 0) continue
        const {done, request} = entry
        const tokens = Uint32Array.from({length: count}, (_, offset) => request.tokens[done + offset])
        const logitTokens: number[] = []
        for (let offset = 0; offset < count; offset++) if (request.logits[done + offset]) logitTokens.push(offset)
        meter(request.tokenMeter, count - logitTokens.length, 'input')
        meter(request.tokenMeter, logitTokens.length, 'output')
        try {
          const batchLogitIndexes = native.addToBatch(request.sequenceId, request.firstTokenSequenceIndex + done, tokens, Uint32Array.from(logitTokens))
          parts.push({batchLogitIndexes, count, logitTokens, waiting: entry})
        } catch (error) {
          this.fail([entry], error)
        }
      }

      if (parts.length === 0) return
      try {
        await native.decodeBatch()
      } catch (error) {
        this.fail(
          parts.map((part) => part.waiting),
          error,
        )
        return
      }

      await Promise.all(parts.map((part) => this.mapLogits(part)))
      const decoded = parts.filter((part) => this.waiting.includes(part.waiting))
      for (const {count, waiting: entry} of decoded) {
        entry.done += count
        const {request} = entry
        if (entry.done < request.tokens.length) continue
        this.waiting.splice(this.waiting.indexOf(entry), 1)
        this.returned.add(request.sequenceId)
        entry.resolve(entry.results)
      }

      // As node-llama-cpp reports it: the sequence's length after this batch, plus one.
      for (const {waiting: entry} of decoded) await entry.request.afterBatchAction?.(entry.request.firstTokenSequenceIndex + entry.done + 1)
    } finally {
      guard?.dispose()
    }
  }

  /** One request's logits, mapped in order; a mapper that fails fails its request only. */
  private async mapLogits(part: {waiting: Waiting; count: number; logitTokens: number[]; batchLogitIndexes: Uint32Array}): Promise<void> {
    const {request} = part.waiting
    const first = request.firstTokenSequenceIndex + part.waiting.done
    try {
      for (const [index, offset] of part.logitTokens.entries()) {
        const value = part.waiting.mapLogits(part.batchLogitIndexes[index], first + offset)
        part.waiting.results.push([first + offset, value instanceof Promise ? await value : value])
      }
    } catch (error) {
      this.fail([part.waiting], error)
    }
  }
}
