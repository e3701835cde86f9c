/**
 * A streamed POST to a program the service started on this machine, read as server-sent events: the lean path
 * every relayed token of an external engine takes. Node's own HTTP client with a keep-alive agent, not fetch: fetch
 * hands each socket read through web streams (the body, a TextDecoderStream, an EventSourceParserStream), and on a
 * 1 ms-a-token stream that cost the service 0.13 ms of CPU a token against 0.08 here (bench/relay-cost.ts and the
 * README's Performance section), CPU a small machine takes from the engine. Events are parsed by eventsource-parser,
 * as everywhere else in the service.
 */
import type {IncomingMessage} from 'node:http'

import {createParser, type EventSourceMessage} from 'eventsource-parser'
import {createRequire} from 'node:module'

/** Required, not imported: an ES import of `node:http` loads Node's bundled undici for nothing (see app.ts). */
const {Agent, request} = createRequire(import.meta.url)('node:http') as typeof import('node:http')

/**
 * Connections kept open between requests, so that a request does not open one (and, in a Python server, start a
 * thread). The agent unreferences idle ones, so they keep no process alive; a program that exits closes its own.
 */
const keptAlive = new Agent({keepAlive: true})

/** A refusal: the program answered with a status other than 2xx. */
export interface UpstreamRefusal {
  status: number
  statusMessage: string
  text: string
}

export interface EventStreamAnswer {
  /** The data of each event (an event without data is skipped), in order; throws if the answer breaks off. */
  events: AsyncGenerator<string>
}

/**
 * POSTs `body` as JSON to `url` and answers its events once the program has answered 2xx, or its refusal. Aborting
 * `signal` (or returning from `events` early) closes the connection, which such servers take as a cancel.
 */
export async function postForEvents(url: string, body: unknown, signal: AbortSignal): Promise<EventStreamAnswer | UpstreamRefusal> {
  const data = Buffer.from(JSON.stringify(body))
  const response = await new Promise<IncomingMessage>((resolve, reject) => {
    const outgoing = request(url, {agent: keptAlive, headers: {'content-length': data.length, 'content-type': 'application/json'}, method: 'POST', signal}, resolve)
    outgoing.once('error', reject)
    outgoing.end(data)
  })
  response.setEncoding('utf8')
  const status = response.statusCode ?? 0
  if (status < 200 || status >= 300) {
    let text = ''
    for await (const piece of response) text += piece
    return {status, statusMessage: response.statusMessage ?? '', text}
  }

  return {events: eventData(response)}
}

/** The data of each event of `response`, as each read of its socket brings them. */
async function* eventData(response: IncomingMessage): AsyncGenerator<string> {
  let arrived: string[] = []
  const parser = createParser({onEvent: (event: EventSourceMessage) => event.data && arrived.push(event.data)})
  try {
    for await (const text of response) {
      parser.feed(text as string)
      const events = arrived
      arrived = []
      yield* events
    }
  } finally {
    // A consumer that stops before the answer's end closes the connection; a whole answer leaves it to the agent.
    if (!response.complete) response.destroy()
  }
}
