/**
 * The one place a request's model is held while it is answered: an inference route (permission `models:read`) whose
 * body names `model` holds that model from before its handler runs until its answer is over (a stream's last byte),
 * so an idle model is never unloaded under a request, and one unloaded is launched again first (on-demand.ts).
 */
import type {ModelUse, RouteDefinition} from '../kernel/contracts.js'

import {badRequest} from '../kernel/errors.js'
import {keepAliveMs} from '../kernel/keep-alive.js'

export interface HeldRequest {
  headers: Record<string, string | string[] | undefined>
  mayStart: boolean
  signal: AbortSignal
}

/** RFC 7240: a client that cannot wait for a model to load asks for `Prefer: respond-async`, and gets a 503 with Retry-After instead. */
const RESPOND_ASYNC = /(^|,)\s*respond-async\s*(;|,|$)/i

/** Holds the model a request names; answers the release, or undefined for a request that names none. */
export async function holdModel(modelUse: ModelUse | undefined, definition: RouteDefinition, body: unknown, request: HeldRequest): Promise<(() => void) | undefined> {
  if (!modelUse || definition.permission !== 'models:read') return undefined
  const {keep_alive: keepAlive, model} = (body ?? {}) as {keep_alive?: unknown; model?: unknown}
  if (typeof model !== 'string') return undefined
  let ms: number | undefined
  if (keepAlive !== undefined && keepAlive !== null) {
    ms = typeof keepAlive === 'string' || typeof keepAlive === 'number' ? keepAliveMs(keepAlive) : undefined
    if (ms === undefined) throw badRequest('`keep_alive` must be a duration such as "5m" or "90s", a number of seconds, or -1 to keep the model loaded.', 'keep_alive')
  }

  const prefer = [request.headers.prefer ?? []].flat().join(',')
  return modelUse.acquire(model, {keepAliveMs: ms, mayStart: request.mayStart, signal: request.signal, wait: !RESPOND_ASYNC.test(prefer)})
}
