/**
 * A route's answers held to what it declares for /openapi.json and the clients made from it: the media types of its
 * `produces` (JSON when it declares none), and server-sent events when it declares `events`. A route answering
 * another type documents itself wrong. With SERVICE_UNDECLARED_ANSWERS=fail (the tests' service processes, or a
 * plugin author's) the answer fails with a 500 naming the route and the type, so the test that calls it sees it;
 * otherwise the answer goes out and the mismatch is logged, once per route and type. (Not NODE_ENV: oclif reads
 * NODE_ENV=test or development as "load plugins from their TypeScript sources".)
 */
import type {Logger, RouteDefinition, RouteResult} from '../kernel/contracts.js'

import {ServiceError} from '../kernel/errors.js'

const EVENT_STREAM = 'text/event-stream'

/** Whether the environment asks for undeclared answers to fail rather than be logged. */
export const failsUndeclaredAnswers = (setting = process.env.SERVICE_UNDECLARED_ANSWERS) => setting === 'fail'

/** A media type without its parameters (`text/plain; charset=utf-8` → `text/plain`). */
const baseType = (mediaType: string) => mediaType.split(';')[0].trim().toLowerCase()

export function declaredMediaTypes(definition: RouteDefinition): string[] {
  const produces = definition.produces ? [definition.produces].flat() : ['application/json']
  return [...produces.map(baseType), ...(definition.events ? [EVENT_STREAM] : [])]
}

/** The media type a result is sent as, as app.ts sends it (Koa's own choice for a body without a Content-Type). */
export function answeredMediaType(result: RouteResult): string {
  if (result.kind === 'sse') return EVENT_STREAM
  if (result.kind === 'bytes') return baseType(result.contentType)
  const header = Object.entries(result.headers ?? {}).find(([name]) => name.toLowerCase() === 'content-type')
  if (header) return baseType(header[1])
  const {body} = result
  if (typeof body === 'string') return /^\s*</.test(body) ? 'text/html' : 'text/plain'
  if (body instanceof Uint8Array || (typeof body === 'object' && body !== null && typeof (body as {pipe?: unknown}).pipe === 'function')) return 'application/octet-stream'
  return 'application/json'
}

/** Checks each answer of one route; throws a ServiceError to fail it, or logs and lets it through. */
export function answerCheck(definition: RouteDefinition, {fail, log}: {fail: boolean; log: Logger}): (result: RouteResult) => void {
  const declared = declaredMediaTypes(definition)
  const logged = new Set<string>()
  return (result) => {
    const answered = answeredMediaType(result)
    if (declared.includes(answered)) return
    const message = `${definition.method} ${definition.path} answered ${answered}, which it does not declare (it declares ${declared.join(', ')}): add it to the route's \`produces\`, or \`events\` for server-sent events.`
    if (fail) throw new ServiceError(500, 'internal_error', message)
    if (logged.has(answered)) return
    logged.add(answered)
    log.warn(message)
  }
}
