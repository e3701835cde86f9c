/**
 * Ollama's `keep_alive`: how long a model stays loaded after its last request. A duration as Go writes one ("5m",
 * "1h30m", "90s"), a number of seconds (a string of digits is one too), a negative one for forever, 0 to unload as
 * soon as the request is over. Read the same way from a request, a launch and SERVICE_KEEP_ALIVE.
 */

/** Go's duration syntax, as Ollama parses keep_alive, or a plain number of seconds. */
export const KEEP_ALIVE_PATTERN = /^(-?\d+(\.\d+)?|-?(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+)$/

/** The longest keep-alive taken other than forever: a year, far past any idle period an operator means. */
export const MAX_KEEP_ALIVE_MS = 365 * 24 * 3600 * 1000

const UNIT_MS: Record<string, number> = {h: 3_600_000, m: 60_000, ms: 1, ns: 1e-6, s: 1000, us: 1e-3, µs: 1e-3}

/**
 * Milliseconds a keep-alive stands for: Infinity for forever (a negative value), 0 for "unload after this request".
 * Answers undefined for a value that is no duration, for the caller to name the field it came from.
 */
export function keepAliveMs(value: number | string): number | undefined {
  const text = String(value).trim()
  if (text.length > 32 || !KEEP_ALIVE_PATTERN.test(text)) return undefined
  if (text.startsWith('-')) return Number.POSITIVE_INFINITY
  const ms = /^\d+(\.\d+)?$/.test(text) ? Number(text) * 1000 : [...text.matchAll(/(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/g)].reduce((sum, [, amount, unit]) => sum + Number(amount) * UNIT_MS[unit], 0)
  return ms > MAX_KEEP_ALIVE_MS ? undefined : Math.round(ms)
}

/** A keep-alive as people read it: "forever", "0s", "90s", "5m", "1h". */
export function describeKeepAlive(ms: number): string {
  if (ms === Number.POSITIVE_INFINITY) return 'forever'
  if (ms % 3_600_000 === 0 && ms > 0) return `${ms / 3_600_000}h`
  if (ms % 60_000 === 0 && ms > 0) return `${ms / 60_000}m`
  return `${ms / 1000}s`
}
