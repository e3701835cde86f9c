/**
 * Every request gets an id: the caller's `X-Request-Id` when it is one a log can safely quote, a new UUID
 * otherwise. It is echoed in the response's `X-Request-Id` (under /anthropic also in `request-id`, the header
 * Anthropic's API answers with), reported on the request's event, and entered as the request's context
 * (kernel/request-context.ts) so the log lines of everything the request runs carry it.
 */
import type Koa from 'koa'

import {randomUUID} from 'node:crypto'

import {withRequestId} from '../kernel/request-context.js'
import {ANTHROPIC_PREFIX} from './access.js'

export const REQUEST_ID_HEADER = 'X-Request-Id'
/** Where Anthropic's API answers with its id, which Anthropic's SDKs read into `_request_id` and their errors' `requestID`. */
export const ANTHROPIC_REQUEST_ID_HEADER = 'request-id'
export const MAX_REQUEST_ID_LENGTH = 200

/** Printable ASCII without spaces, as proxies and tracing systems generate them; anything else could forge or bloat log lines. */
const ACCEPTABLE_REQUEST_ID = new RegExp(`^[\\x21-\\x7E]{1,${MAX_REQUEST_ID_LENGTH}}$`)

/** The caller's id when it is acceptable, else a new one. */
export function requestIdFor(incoming: string | undefined, generate: () => string = randomUUID): string {
  return incoming !== undefined && ACCEPTABLE_REQUEST_ID.test(incoming) ? incoming : generate()
}

/** The id `assignRequestIds` gave the request. */
export const requestIdOf = (ctx: Koa.Context): string | undefined => (ctx.state as {requestId?: string}).requestId

/** Middleware that gives the request its id, echoes it, and runs the rest of the request in its context. */
export function assignRequestIds(): Koa.Middleware {
  return (ctx, next) => {
    const requestId = requestIdFor(ctx.get(REQUEST_ID_HEADER) || undefined)
    ;(ctx.state as {requestId?: string}).requestId = requestId
    ctx.set(REQUEST_ID_HEADER, requestId)
    if (ctx.path.startsWith(ANTHROPIC_PREFIX)) ctx.set(ANTHROPIC_REQUEST_ID_HEADER, requestId)
    return withRequestId(requestId, next)
  }
}
