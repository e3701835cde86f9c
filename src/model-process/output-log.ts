/**
 * A child's output in the model's log: every line a line of the service's own, timestamped, as text or JSON as the
 * service logs. Lines the child's logger already wrote that way (a Node model process's) are kept as they are; any
 * other (an external program's, or what a native library prints on its own) becomes an `info` line of `name` with the
 * stream it came from. The last lines are kept, as written, for error reports.
 */
import type {Readable} from 'node:stream'

import {type LogFile, type LogFormat, logLineFormat} from '../util/logger.js'

/** A line of the service's logger: `2026-…Z level [name] …` in text, `{"level":…` in JSON. */
const SERVICE_LINE = {json: /^\{"level":"(debug|info|warn|error)","time":"/, text: /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (debug|info |warn |error) \[/}

/** A line the model's log wrote about a request carries the request's id: `request_id=…` in text, `"request_id":` in JSON. */
const REQUEST_LINE = /\brequest_id=|"request_id":/

/**
 * The lines of a child's output that are its own rather than about a request. A crash's message goes to every client
 * with a request in flight, so its cause is looked for only in these: the others name other clients' requests.
 */
export const ownLines = (lines: readonly string[]): string[] => lines.filter((line) => !REQUEST_LINE.test(line))

/** Calls `line` with each whole line of text given in pieces; `end` hands over a last line with no newline. */
function lineSplitter(line: (text: string) => void) {
  let partial = ''
  return {
    add(text: string) {
      const pieces = (partial + text).split('\n')
      partial = pieces.pop() ?? ''
      for (const piece of pieces) if (piece.trim() !== '') line(piece.replace(/\r$/, ''))
    },
    end() {
      if (partial.trim() !== '') line(partial)
      partial = ''
    },
  }
}

export function outputLog(log: LogFile, {format, name, tailLines}: {format: LogFormat; name: string; tailLines: number}) {
  const formatted = logLineFormat(name, format)
  const tail: string[] = []
  const write = (stream: 'stderr' | 'stdout' | 'service') => (text: string) => {
    tail.push(text)
    tail.splice(0, Math.max(0, tail.length - tailLines))
    if (stream !== 'service' && SERVICE_LINE[format].test(text)) log.write(`${text}\n`)
    // These lines belong to no request, whichever one the launch came in with.
    else log.write(formatted(stream === 'service' ? 'error' : 'info', text, {request_id: undefined, stream}))
  }

  const streams = {service: lineSplitter(write('service')), stderr: lineSplitter(write('stderr')), stdout: lineSplitter(write('stdout'))}
  return {
    follow(stream: 'stderr' | 'stdout', readable: Readable) {
      readable.on('data', (chunk: Buffer) => streams[stream].add(chunk.toString()))
      readable.on('end', () => streams[stream].end())
    },
    /** The last lines, oldest first. */
    lines: () => [...tail],
    /** A line of the service's own about the child (that it could not be started). */
    service: (text: string) => streams.service.add(`${text}\n`),
  }
}
