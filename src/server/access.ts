/**
 * Access control at the HTTP edge. Every route's middleware chain starts with its guard, so no handler (nor
 * body parser) runs before the caller is checked against the route's permission. A request that no route
 * takes must authenticate too: anonymous callers get 401 for every path that is not public, and only
 * authenticated ones learn that a path does not exist (404), takes another method (405) or which methods
 * it takes (OPTIONS).
 */
import type Koa from 'koa'

import {timingSafeEqual} from 'node:crypto'

import type {AccessControl, Caller} from '../auth/access-control.js'
import type {ModelScope, RouteDefinition} from '../kernel/contracts.js'

import {ServiceError} from '../kernel/errors.js'
import {ADMIN, AUTHENTICATED, CLUSTER, type Permission, PUBLIC, requiredPermission} from '../kernel/permissions.js'
import {type Authority, NO_AUTHORITY} from '../kernel/reach.js'

/** Routes under this prefix speak Anthropic's API, whose clients send their key in `x-api-key`. */
export const ANTHROPIC_PREFIX = '/anthropic'
/** Routes under this prefix speak Ollama's API, whose errors are `{"error": "…"}`. */
export const OLLAMA_PREFIX = '/api/'

/** A request to a route of Anthropic's API: under ANTHROPIC_PREFIX, or one the app marked so (POST /v1/messages). */
const speaksAnthropic = (ctx: Koa.Context) => (ctx.state as {errorStyle?: string}).errorStyle === 'anthropic' || ctx.path.startsWith(ANTHROPIC_PREFIX)

interface AccessState {
  caller?: Promise<Caller>
  /** The caller a route's guard let through; none for a public route, which asks for no credential. */
  admitted?: Caller
  routed?: boolean
  /** The name of the key that authenticated, admitted or not: what the request is accounted under. */
  keyName?: string
}

/**
 * The name of the key a route's guard authenticated (what the request is accounted under), whether it then let it
 * through or refused it (permission, quota); none for a public route, a credential that is not valid, or without access control.
 */
export const callerKeyName = (ctx: Koa.Context): string | undefined => (ctx.state as AccessState).keyName

/** The credential of an `Authorization: Bearer <credential>` header; none without the header. */
export function bearerCredential(header: string | undefined): string | undefined {
  if (!header) return undefined
  const match = /^Bearer +(\S+) *$/i.exec(header)
  if (!match) throw new ServiceError(401, 'invalid_credentials', 'the Authorization header must be `Bearer <API key or access token>`.')
  return match[1]
}

export function accessGuards(access: AccessControl) {
  const credentialOf = (ctx: Koa.Context): string | undefined => bearerCredential(ctx.get('authorization')) ?? (speaksAnthropic(ctx) ? ctx.get('x-api-key') || undefined : undefined)

  /** Who is calling; worked out once per request, when first needed. */
  const callerOf = (ctx: Koa.Context): Promise<Caller> => {
    const state = ctx.state as AccessState
    state.caller ??= (async () => {
      const credential = credentialOf(ctx)
      if (credential) return access.authenticate(credential)
      const bearer = '`Authorization: Bearer <credential>` with an API key or an access token from POST /token'
      const how = speaksAnthropic(ctx) ? `\`x-api-key: <API key>\`, or ${bearer}` : bearer
      throw new ServiceError(401, 'unauthorized', `this service has access control on: send ${how} (servicectl: --api-key, or \`servicectl login\`).`)
    })()
    return state.caller
  }

  const route =
    (definition: RouteDefinition): Koa.Middleware =>
    async (ctx, next) => {
      ;(ctx.state as AccessState).routed = true
      const permission = requiredPermission(definition)
      if (permission === CLUSTER) throw new ServiceError(403, 'forbidden', `${definition.method} ${definition.path} is for cluster members only, and this service has no cluster token.`)
      if (permission !== PUBLIC) {
        const caller = await callerOf(ctx)
        ;(ctx.state as AccessState).keyName = caller.keyName
        // A key over its quota may still read its own usage, which says why.
        if (permission !== AUTHENTICATED) {
          access.authorize(caller, permission, `${definition.method} ${definition.path}`)
          access.checkQuotas(caller)
        }
        ;(ctx.state as AccessState).admitted = caller
      }

      await next()
    }

  /** Whether the caller that the route's guard admitted has a permission; false where no guard asked who calls (a public route). */
  const allows = (ctx: Koa.Context, permission: Permission): boolean => {
    const caller = (ctx.state as AccessState).admitted
    return caller !== undefined && access.allows(caller, permission)
  }

  const unrouted: Koa.Middleware = async (ctx, next) => {
    try {
      await next()
    } finally {
      // Replaces the 404, 405 or OPTIONS answer with a 401 when the caller is not authenticated, and drops
      // the Allow header the router put on an OPTIONS answer, which would list the methods of a route that exists.
      if (!(ctx.state as AccessState).routed)
        await callerOf(ctx).catch((error: unknown) => {
          ctx.remove('Allow')
          throw error
        })
    }
  }

  /** The admitted caller's authority over what the service runs and reads; none for a public route. */
  const authorityOf = (ctx: Koa.Context): Authority => {
    const caller = (ctx.state as AccessState).admitted
    return caller ? {admin: access.allows(caller, ADMIN), keyName: caller.keyName, usageKeys: caller.usageKeys, username: caller.username} : NO_AUTHORITY
  }

  /** The models the admitted caller's key may use; every model for a public route's caller, who has no key. */
  const modelScope = (ctx: Koa.Context): ModelScope => {
    const caller = (ctx.state as AccessState).admitted
    return {
      has: (uid) => caller?.inScope(uid) ?? true,
      require(uid) {
        if (caller) access.requireInScope(caller, uid)
      },
    }
  }

  return {allows, authorityOf, modelScope, route, unrouted}
}

/**
 * The guard of `cluster` routes (worker ↔ supervisor): the caller must send `Authorization: Bearer <cluster token>`.
 * Users' API keys and tokens are not accepted, whatever their permissions: these routes run and end models
 * without the checks the public API makes.
 */
export function clusterGuard(token: string): Koa.Middleware {
  const expected = Buffer.from(token)
  return async (ctx, next) => {
    ;(ctx.state as AccessState).routed = true
    const sent = Buffer.from(/^Bearer +(\S+) *$/i.exec(ctx.get('authorization'))?.[1] ?? '')
    if (sent.length !== expected.length || !timingSafeEqual(sent, expected))
      throw new ServiceError(401, 'unauthorized', `${ctx.method} ${ctx.path} is for cluster members: send the cluster token (service-worker --cluster-token, or SERVICE_CLUSTER_TOKEN).`)
    await next()
  }
}
