/**
 * Operations of programs that answer a POSTed JSON payload with JSON lines as they work (python/service_http.py's
 * `line`: a step done, then each result), and refuse with OpenAI's error body, or, once the answer has begun, with an
 * `{"type": "error", status, message, param}` line (the diffusers and stable-diffusion.cpp engines' programs). Each
 * line is an event the moment it arrives; the signal closes the connection, which the program takes as the cue to
 * stop at its next step.
 */
import type {ExternalEndpoint} from './external-engine.js'

import {errorFactory} from './errors.js'

/** POSTs `payload` to the program's `path` and answers its lines as events. */
export type JsonLinesCall = <Event>(path: string, payload: unknown, endpoint: ExternalEndpoint) => AsyncGenerator<Event>

interface ProgramError {
  type?: 'error'
  status?: number
  message?: string
  param?: string | null
}

async function* lines(body: ReadableStream<Uint8Array>): AsyncGenerator<unknown> {
  // A line can be tens of megabytes (a base64 video) arriving in 64 KiB chunks: searching and copying the whole
  // buffered line again at every chunk would take seconds of the service's main thread. Each chunk is searched once,
  // and a line's pieces are joined once, when its end comes.
  let pieces: string[] = []
  for await (const text of body.pipeThrough(new TextDecoderStream())) {
    let start = 0
    let end
    while ((end = text.indexOf('\n', start)) >= 0) {
      pieces.push(text.slice(start, end))
      const line = pieces.join('')
      pieces = []
      start = end + 1
      if (line.trim()) yield JSON.parse(line)
    }
    if (start < text.length) pieces.push(text.slice(start))
  }
}

/** Calls of a program named `programName` in its failures ("the diffusers program failed: …"). */
export function jsonLinesProgram(programName: string): JsonLinesCall {
  const failure = ({message, param, status}: ProgramError) =>
    status === 400
      ? errorFactory.badRequest(message ?? 'the model refused the request', param ?? undefined)
      : errorFactory.create(500, 'generation_failed', `the ${programName} program failed: ${message ?? 'no reason given'}`)

  return async function* call<Event>(path: string, payload: unknown, {baseUrl, signal}: ExternalEndpoint): AsyncGenerator<Event> {
    const response = await fetch(`${baseUrl}${path}`, {body: JSON.stringify(payload), headers: {'content-type': 'application/json'}, method: 'POST', signal})
    if (!response.ok) {
      const reply = (await response.json().catch(() => ({}))) as {error?: ProgramError}
      throw failure({...reply.error, status: response.status})
    }

    for await (const event of lines(response.body!)) {
      if ((event as ProgramError).type === 'error') throw failure(event as ProgramError)
      yield event as Event
    }
  }
}
