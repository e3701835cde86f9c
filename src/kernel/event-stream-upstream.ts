/**
 * A streamed POST to a program the service started on this machine, read as server-sent events: the lean path
 * every relayed token of an external engine takes. Node's own HTTP client with a keep-alive agent, not fetch: fetch
 * hands each socket read through web streams (the body, a TextDecoderStream, an EventSourceParserStream), and on a
 * 1 ms-a-token stream that cost the service 0.13 ms of CPU a token against 0.08 here (bench/relay-cost.ts and
 * docs/benchmarks.md), CPU a small machine takes from the engine. Events are parsed by eventsource-parser,
 * as everywhere else in the service.
 */
import type {IncomingMessage} from 'node:http'
import type {Socket} from 'node:net'

import {createParser, type EventSourceMessage} from 'eventsource-parser'
import {createRequire} from 'node:module'

/** Required, not imported: an ES import of `node:http` loads Node's bundled undici for nothing (see app.ts). */
const {Agent, request} = createRequire(import.meta.url)('node:http') as typeof import('node:http')

/**
 * Sockets buffer one byte at most before they stop reading their connection: a paused socket (see rest) then stops
 * reading after the chunk in flight, where by default it reads on, a wake-up a chunk, into a buffer of 64 KiB; a
 * flowing one, as every socket is when not resting, hands each chunk on as it comes whatever the limit. An answer
 * takes its socket's limit, so what a socket holds reaches the answer a chunk at a time (see eventData).
 */
const RESTING_SOCKETS = {readableHighWaterMark: 1}

/**
 * Connections kept open between requests, so that a request does not open one (and, in a Python server, start a
 * thread). The agent unreferences idle ones, so they keep no process alive; a program that exits closes its own.
 */
const keptAlive = new Agent({keepAlive: true, ...RESTING_SOCKETS})

/** A refusal: the program answered with a status other than 2xx. */
export interface UpstreamRefusal {
  status: number
  statusMessage: string
  text: string
}

export interface EventStreamOptions {
  /**
   * Once the answer's first events (its start and first token) have come, how long each read of the connection is
   * followed by a rest in which the service does not read it (the service's stream interval). A program that writes
   * a token per chunk otherwise wakes the service once a token, and on a small machine those wake-ups take the
   * cores the program generates on; what arrives in a rest is read at its end, in one go. A program slower than the
   * interval is read as soon as it writes. A rest lasts 16 ms at most, whatever the interval. Unless given, every
   * chunk is read as it comes.
   */
  readIntervalMs?: number
}

export interface EventStreamAnswer {
  /** The data of each event (an event without data is skipped), in order; throws if the answer breaks off. */
  events: AsyncGenerator<string>
}

/**
 * POSTs `body` as JSON to `url` and answers its events once the program has answered 2xx, or its refusal. Aborting
 * `signal` (or returning from `events` early) closes the connection, which such servers take as a cancel.
 */
export async function postForEvents(url: string, body: unknown, signal: AbortSignal, options: EventStreamOptions = {}): Promise<EventStreamAnswer | UpstreamRefusal> {
  const data = Buffer.from(JSON.stringify(body))
  const response = await post(url, data, signal).catch((error: Error & {reusedSocket?: boolean}) => {
    // A kept connection the program closed as idle (uvicorn's, vLLM's and SGLang's, after 5 s) just as the request went
    // out on it: the program never read the request, so it goes again on a new connection, once.
    if (!error.reusedSocket || signal.aborted) throw error
    return post(url, data, signal)
  })
  response.setEncoding('utf8')
  const status = response.statusCode ?? 0
  if (status < 200 || status >= 300) {
    let text = ''
    for await (const piece of response) text += piece
    return {status, statusMessage: response.statusMessage ?? '', text}
  }

  return {events: eventData(response, options.readIntervalMs)}
}

/** The answer's head; an error before it says whether the request went out on a kept connection. */
function post(url: string, data: Buffer, signal: AbortSignal): Promise<IncomingMessage> {
  return new Promise<IncomingMessage>((resolve, reject) => {
    const outgoing = request(url, {agent: keptAlive, headers: {'content-length': data.length, 'content-type': 'application/json'}, method: 'POST', signal}, resolve)
    outgoing.once('error', (error) => reject(Object.assign(error, {reusedSocket: outgoing.reusedSocket})))
    outgoing.end(data)
  })
}

/** Events read without a rest before one: an answer's start and its first token, which the client waits for. */
const PROMPT_EVENTS = 2
/**
 * The longest rest, whatever the stream interval: a rest holds a token that comes early in it to its end, and the
 * service's own pacing (the Outbox) already joins what a longer interval would.
 */
const LONGEST_REST_MS = 16

/** Leaves `socket` unread for `ms`: past one chunk, its data waits in the kernel and does not wake the service. */
async function rest(socket: Socket, ms: number): Promise<void> {
  // The answer's own read-ahead resumes its socket on the turn a chunk came; pausing after it keeps the pause.
  await new Promise((resolve) => setImmediate(resolve))
  socket.pause()
  await new Promise((resolve) => setTimeout(resolve, ms))
  socket.resume()
  // The loop's next poll reads what waited, all of it at once; going on after it finds it there.
  await new Promise((resolve) => setImmediate(resolve))
}

/** The data of each event of `response`, as each read of its socket brings them. */
async function* eventData(response: IncomingMessage, readIntervalMs: number | undefined): AsyncGenerator<string> {
  let arrived: string[] = []
  let read = 0
  const parser = createParser({onEvent: (event: EventSourceMessage) => event.data && arrived.push(event.data)})
  try {
    for await (const text of response) {
      parser.feed(text as string)
      const events = arrived
      arrived = []
      read += events.length
      yield* events
      // A rest begins once what the last read brought is handed on: a resting socket passes it on a chunk at a time.
      const {socket} = response
      if (readIntervalMs && read >= PROMPT_EVENTS && !response.complete && socket && socket.readableLength === 0) await rest(socket, Math.min(readIntervalMs, LONGEST_REST_MS))
    }
  } finally {
    // A consumer that stops before the answer's end closes the connection; a whole answer leaves it to the agent.
    if (!response.complete) response.destroy()
  }
}
