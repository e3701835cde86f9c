/**
 * `GET /v1/usage`: requests and tokens per API key and model over a period. Any caller with a valid credential may
 * ask; an admin sees every key, an API key only its own usage, and a login (access token) its user's keys and logins.
 * Without access control every caller is admin, and requests are under no key.
 */
import type {RouteDefinition} from '../../kernel/contracts.js'
import type {UsageLedger} from '../usage-ledger.js'

import {badRequest, ServiceError} from '../../kernel/errors.js'
import {AUTHENTICATED} from '../../kernel/permissions.js'
import {USAGE_GROUPS, USAGE_WINDOWS, usageReplySchema} from '../../protocol/usage.js'
import {USAGE_RETENTION_DAYS} from '../usage-ledger.js'

const HOUR_MS = 3_600_000
const WINDOW_MS: Record<(typeof USAGE_WINDOWS)[number], number> = {'1h': HOUR_MS, '24h': 24 * HOUR_MS, '30d': 30 * 24 * HOUR_MS, '7d': 7 * 24 * HOUR_MS}
const TIME = {description: 'An ISO 8601 time (`2026-11-28T09:00:00Z`) or seconds since the epoch.', schema: {maxLength: 40, type: 'string'}}

/** A time given as ISO 8601 or as seconds since the epoch, in milliseconds. */
function timeOf(text: string, name: string): number {
  const time = /^\d{1,12}(\.\d+)?$/.test(text) ? Number(text) * 1000 : Date.parse(text)
  if (text.length > 40 || !Number.isFinite(time)) throw badRequest(`query parameter \`${name}\` must be an ISO 8601 time (2026-11-28T09:00:00Z) or seconds since the epoch.`, name)
  return time
}

export function usageRoutes(ledger: UsageLedger, now: () => number = Date.now): RouteDefinition[] {
  return [
    {
      example: {query: {api_key: 'ops', group_by: 'key,model', since: '2026-01-01T00:00:00Z', until: '2036-01-01T00:00:00Z', window: '24h'}},
      async handler({authority, query}) {
        const text = (name: string) => (typeof query[name] === 'string' && query[name] !== '' ? query[name] : undefined)
        const until = text('until') === undefined ? now() : timeOf(text('until')!, 'until')
        const window = text('window') as keyof typeof WINDOW_MS | undefined
        const since = text('since') === undefined ? until - WINDOW_MS[window ?? '24h'] : timeOf(text('since')!, 'since')
        if (since >= until) throw badRequest('`since` must be before `until`.', 'since')
        const asked = text('api_key')
        // Every caller is admin without access control; with it, a caller that is not admin sees only its own keys.
        const own = authority.usageKeys ?? []
        if (!authority.admin && asked !== undefined && !own.includes(asked))
          throw new ServiceError(403, 'forbidden', `only an admin may see the usage of another key; yours: ${own.map((name) => `"${name}"`).join(', ')} (or leave out api_key).`, 'api_key')
        const keys = asked === undefined ? (authority.admin ? undefined : own) : [asked]
        const groupBy = (text('group_by') ?? 'key,model') as (typeof USAGE_GROUPS)[number]
        const from = since - (since % HOUR_MS)
        const data = ledger.query({groupBy, since: from, until, ...(keys === undefined ? {} : {keys})})
        return {body: {data, group_by: groupBy, object: 'usage', since: new Date(from).toISOString(), until: new Date(until).toISOString()}, kind: 'json'}
      },
      method: 'GET',
      path: '/v1/usage',
      permission: AUTHENTICATED,
      query: {
        api_key: {description: "Only this key's usage, by its name (admins; anyone else only one of their own).", schema: {maxLength: 100, type: 'string'}},
        group_by: {description: 'Rows per key, per model, or per key and model (the default).', schema: {default: 'key,model', enum: [...USAGE_GROUPS], type: 'string'}},
        since: {...TIME, description: `The start: ${TIME.description} Usage is kept by the hour, for ${USAGE_RETENTION_DAYS} days.`},
        until: {...TIME, description: `The end (now by default): ${TIME.description}`},
        window: {description: 'The period before `until` when `since` is not given (24h by default).', schema: {enum: [...USAGE_WINDOWS], type: 'string'}},
      },
      response: usageReplySchema.json,
      summary: 'Requests and tokens per API key (by its name) and per model: every key for an admin, your own otherwise',
      tag: 'service',
    },
  ]
}
