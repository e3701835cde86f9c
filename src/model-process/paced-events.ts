import {Outbox, type OutboxTimers} from './outbox.js'

/** The one request a paced stream's outbox carries. */
const REQUEST = 0

/**
 * An event stream paced as a model process paces its requests' streams: through an Outbox of its own, so that the
 * first events go on at once and later ones are held, and joined by `join`, while the next is due within
 * `intervalMs` of the last that went on. An external program (a Python engine's server) streams a token per chunk;
 * relayed one by one, each costs the service a chat chunk, its JSON and a socket write, and the client a wake-up,
 * taken from the program's own cores. The source's failure comes out as it was thrown, after what it yielded
 * before; stopping early returns the source (its request's signal is what ends its upstream read).
 */
export async function* pacedEvents<T>(
  events: AsyncIterable<T>,
  intervalMs: number,
  join: (earlier: unknown, later: unknown) => unknown,
  timers?: OutboxTimers,
): AsyncGenerator<T> {
  let ready: T[] = []
  let ended = false
  let failure: {error: unknown} | undefined
  let wake: (() => void) | undefined
  const outbox = new Outbox(
    async (message) => {
      for (const sent of message.type === 'batch' ? message.messages : [message]) {
        if (sent.type === 'event') ready.push(sent.event as T)
        else ended = true
      }

      wake?.()
    },
    intervalMs,
    timers,
    join,
  )
  const source = events[Symbol.asyncIterator]()
  let finished = false
  void (async () => {
    try {
      for (let next = await source.next(); !next.done; next = await source.next()) outbox.post({event: next.value, id: REQUEST, type: 'event'})
      finished = true
    } catch (error) {
      failure = {error}
    }

    outbox.post({id: REQUEST, type: 'end'})
  })()
  try {
    while (true) {
      if (ready.length === 0 && !ended) await new Promise<void>((resolve) => (wake = resolve))
      wake = undefined
      const batch = ready
      ready = []
      for (const event of batch) yield event
      if (ended && ready.length === 0) break
    }

    if (failure) throw failure.error
  } finally {
    // Not awaited: a read still pending ends when the request's signal aborts it.
    if (!finished && !failure) source.return?.().catch(() => {})
  }
}
