/**
 * Quotas per API key (key-limits.ts) counted in fixed windows in memory: the current minute and the current UTC day.
 * A request counts when it begins running on a model, its tokens when it ends (they are known only then), so the check
 * before a request refuses only a window already spent. Everything is O(1) per request: a few numbers per key name,
 * and key names come only from the access-control config, so the map is as large as the config at most.
 */
import type {QuotaField, Quotas} from './key-limits.js'

import {ServiceError} from '../kernel/errors.js'

const MINUTE_MS = 60_000
const DAY_MS = 24 * 60 * MINUTE_MS

interface Counts {
  start: number
  requests: number
  tokens: number
}

interface KeyWindows {
  minute: Counts
  day: Counts
}

const LIMITS: Array<{field: QuotaField; window: 'minute' | 'day'; counts: 'requests' | 'tokens'}> = [
  {counts: 'requests', field: 'requests_per_minute', window: 'minute'},
  {counts: 'tokens', field: 'tokens_per_minute', window: 'minute'},
  {counts: 'requests', field: 'requests_per_day', window: 'day'},
  {counts: 'tokens', field: 'tokens_per_day', window: 'day'},
]

export class QuotaWindows {
  private readonly keys = new Map<string, KeyWindows>()

  constructor(private readonly now: () => number = Date.now) {}

  /** Throws a 429 with Retry-After (seconds until the window frees) when one of the quotas is already spent. */
  check(name: string, quotas: Quotas | undefined, who: string): void {
    if (!quotas) return
    const windows = this.current(name)
    for (const {counts, field, window} of LIMITS) {
      const limit = quotas[field]
      if (limit === undefined || windows[window][counts] < limit) continue
      const frees = windows[window].start + (window === 'minute' ? MINUTE_MS : DAY_MS)
      const seconds = Math.max(1, Math.ceil((frees - this.now()) / 1000))
      throw new ServiceError(
        429,
        'quota_exceeded',
        `${who} has used its quota of ${limit} ${counts} per ${window} (${field}); it frees in ${seconds} s, at ${new Date(frees).toISOString()}. Ask an administrator to raise ${field} in the access-control config.`,
      ).withRetryAfter(seconds)
    }
  }

  countRequest(name: string): void {
    const windows = this.current(name)
    windows.minute.requests++
    windows.day.requests++
  }

  countTokens(name: string, tokens: number): void {
    if (!(tokens > 0)) return
    const windows = this.current(name)
    windows.minute.tokens += tokens
    windows.day.tokens += tokens
  }

  /** What the key used earlier today, before a restart (from the usage ledger). */
  seedDay(name: string, requests: number, tokens: number): void {
    const {day} = this.current(name)
    day.requests += requests
    day.tokens += tokens
  }

  /** The key's windows, those that ended started afresh. */
  private current(name: string): KeyWindows {
    const now = this.now()
    const minute = now - (now % MINUTE_MS)
    const day = now - (now % DAY_MS)
    let windows = this.keys.get(name)
    if (!windows) this.keys.set(name, (windows = {day: {requests: 0, start: day, tokens: 0}, minute: {requests: 0, start: minute, tokens: 0}}))
    if (windows.minute.start !== minute) windows.minute = {requests: 0, start: minute, tokens: 0}
    if (windows.day.start !== day) windows.day = {requests: 0, start: day, tokens: 0}
    return windows
  }
}
