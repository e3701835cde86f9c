import {Readable} from 'node:stream'

import {type ServiceError, toOpenAiErrorBody, toServiceError} from '../kernel/errors.js'

/**
 * Turns an event stream into server-sent events. An error after the stream has started can no longer change
 * the HTTP status, so it is sent as a last `data:` event in the route family's error shape, and the stream ends.
 * Aborting `until` (the service shutting down) ends it the same way, with the signal's reason as the error.
 * Koa destroys the returned stream when the client goes away, which returns from the iterator and so
 * aborts the model's work.
 */
export function toServerSentEvents(
  events: AsyncIterable<unknown>,
  {
    errorEvent = (error) => toOpenAiErrorBody(error),
    onError,
    terminator,
    until,
  }: {terminator?: string; errorEvent?: (error: ServiceError) => unknown; onError?: (error: ServiceError) => void; until?: AbortSignal},
): Readable {
  // An item `{event, data}` is a named event (Anthropic's streams, whose clients skip unnamed ones).
  const format = (event: unknown) =>
    typeof event === 'object' && event !== null && 'event' in event && 'data' in event
      ? `event: ${(event as {event: string}).event}\ndata: ${JSON.stringify((event as {data: unknown}).data)}\n\n`
      : `data: ${JSON.stringify(event)}\n\n`
  async function* lines() {
    const iterator = events[Symbol.asyncIterator]()
    let ended = false
    try {
      while (true) {
        const next = await nextUnlessAborted(iterator, until)
        ended = next.done === true
        if (ended) break
        yield format(next.value)
      }

      if (terminator) yield `data: ${terminator}\n\n`
    } catch (error) {
      const shaped = toServiceError(error)
      onError?.(shaped)
      yield format(errorEvent(shaped))
    } finally {
      // Not awaited: a next() still pending holds the return back until the model sends (or fails) again.
      if (!ended) iterator.return?.().catch(() => {})
    }
  }

  return Readable.from(coalesced(lines()), {objectMode: false})
}

/** The iterator's next event, or the reason of `until` as soon as it is aborted. */
async function nextUnlessAborted<T>(iterator: AsyncIterator<T>, until?: AbortSignal): Promise<IteratorResult<T>> {
  until?.throwIfAborted()
  if (!until) return iterator.next()
  let stop!: () => void
  const aborted = new Promise<never>((_, reject) => {
    stop = () => reject(until.reason)
    until.addEventListener('abort', stop, {once: true})
  })
  try {
    return await Promise.race([iterator.next(), aborted])
  } finally {
    until.removeEventListener('abort', stop)
  }
}

const TURN_ENDED = Symbol('turn ended')

/**
 * Joins the lines that are ready within the event-loop turn of the first one (a model process sends the tokens of
 * a few decode steps in one IPC message) into one chunk, so they cost one socket write and wake the client once.
 */
async function* coalesced(lines: AsyncGenerator<string>): AsyncGenerator<string> {
  let next: Promise<IteratorResult<string>> | undefined
  try {
    while (true) {
      const first = await (next ?? lines.next())
      next = undefined
      if (first.done) return
      let chunk = first.value
      const turnEnded = new Promise<typeof TURN_ENDED>((resolve) => setImmediate(resolve, TURN_ENDED))
      while (true) {
        const following = lines.next()
        const ready = await Promise.race([following, turnEnded])
        if (ready === TURN_ENDED) {
          next = following
          break
        }

        if (ready.done) {
          yield chunk
          return
        }

        chunk += ready.value
      }

      yield chunk
    }
  } finally {
    await lines.return(undefined)
  }
}
