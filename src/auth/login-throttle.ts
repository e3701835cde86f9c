/**
 * Slows password guessing at `POST /token`: failed logins are counted in a sliding window per username and per
 * client address, and once either count reaches its limit every login for that username or from that address is
 * refused with 429, the right password included, until the oldest failure leaves the window. A successful
 * login clears its username's count but not its address's, so one good login cannot pay for another
 * username's guesses from the same address.
 */
import {isIPv6} from 'node:net'

import {ServiceError} from '../kernel/errors.js'

export interface LoginLimits {
  /** Failed logins a username may have within the window. */
  perUsername: number
  /** Failed logins an address may make within the window, whatever the usernames. */
  perAddress: number
  windowMs: number
  /** The most usernames and addresses remembered; past it the ones seen longest ago are forgotten, so memory stays bounded. */
  maxTracked: number
}

export const DEFAULT_LOGIN_LIMITS: LoginLimits = {maxTracked: 10_000, perAddress: 20, perUsername: 5, windowMs: 60_000}

/**
 * The key an address is counted under: an IPv4 address (also when written as IPv4-mapped IPv6) as it is, an IPv6
 * address by its /64 network, since one machine commonly holds a whole /64 and could otherwise change address per guess.
 */
export function addressKey(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)
  if (mapped) return mapped[1]
  if (!isIPv6(address)) return address
  const [head, tail = ''] = address.toLowerCase().split('::')
  const left = head ? head.split(':') : []
  const right = tail ? tail.split(':') : []
  const groups = address.includes('::') ? [...left, ...Array.from({length: 8 - left.length - right.length}, () => '0'), ...right] : left
  return `${groups.slice(0, 4).map((group) => Number.parseInt(group, 16).toString(16)).join(':')}::/64`
}

/** The times of the failures still in the window, oldest first, for each username and address. */
class FailureWindows {
  private readonly failures = new Map<string, number[]>()

  constructor(private readonly limits: LoginLimits) {}

  /** The failures of `key` still in the window at `now`. */
  recent(key: string, now: number): number[] {
    const times = this.failures.get(key)
    if (!times) return []
    while (times.length > 0 && times[0] <= now - this.limits.windowMs) times.shift()
    if (times.length === 0) this.failures.delete(key)
    return times
  }

  record(key: string, now: number, limit: number): void {
    const times = this.recent(key, now)
    // Moved to the end of the map's order: the forgotten keys are those that failed longest ago.
    this.failures.delete(key)
    this.failures.set(key, [...times, now].slice(-limit))
    for (const oldest of this.failures.keys()) {
      if (this.failures.size <= this.limits.maxTracked) break
      this.failures.delete(oldest)
    }
  }

  clear(key: string): void {
    this.failures.delete(key)
  }

  get size(): number {
    return this.failures.size
  }
}

export class LoginThrottle {
  private readonly windows: FailureWindows

  constructor(
    private readonly limits: LoginLimits = DEFAULT_LOGIN_LIMITS,
    private readonly now: () => number = Date.now,
  ) {
    this.windows = new FailureWindows(limits)
  }

  /** Throws a 429 (with the seconds to wait) when the username or the address has no failed logins left in the window. */
  check(username: string, address: string): void {
    const now = this.now()
    const blocked = [
      {key: `user ${username}`, limit: this.limits.perUsername, what: `${this.limits.perUsername} failed logins for this username`},
      {key: `address ${addressKey(address)}`, limit: this.limits.perAddress, what: `${this.limits.perAddress} failed logins from your address`},
    ].flatMap(({key, limit, what}) => {
      const times = this.windows.recent(key, now)
      // Free again once enough of the failures have left the window to bring the count under the limit.
      return times.length >= limit ? [{until: times[times.length - limit] + this.limits.windowMs, what}] : []
    })
    if (blocked.length === 0) return
    const latest = blocked.reduce((a, b) => (b.until > a.until ? b : a))
    const seconds = Math.max(1, Math.ceil((latest.until - now) / 1000))
    throw new ServiceError(
      429,
      'login_throttled',
      `too many failed logins: ${latest.what} within ${this.limits.windowMs / 1000} s; try again in ${seconds} s (at ${new Date(latest.until).toISOString()}). Every login is refused until then, even with the right password.`,
    ).withRetryAfter(seconds)
  }

  failed(username: string, address: string): void {
    const now = this.now()
    this.windows.record(`user ${username}`, now, this.limits.perUsername)
    this.windows.record(`address ${addressKey(address)}`, now, this.limits.perAddress)
  }

  succeeded(username: string): void {
    this.windows.clear(`user ${username}`)
  }

  /** How many usernames and addresses are remembered, for tests of the bound. */
  get tracked(): number {
    return this.windows.size
  }
}
