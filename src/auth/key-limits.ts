/**
 * What the access-control config may add to a user or an API key beyond its permissions: quotas (requests and tokens
 * per minute and per day) and a model scope (the model uids, or glob patterns of them, it may use). Checked here with
 * the rest of the config (config.ts), each problem naming its place in the file.
 */
export const QUOTA_FIELDS = ['requests_per_minute', 'requests_per_day', 'tokens_per_minute', 'tokens_per_day'] as const
export type QuotaField = (typeof QUOTA_FIELDS)[number]
export type Quotas = Partial<Record<QuotaField, number>>

/** A billion: far beyond any real quota, and safely within a double's whole numbers after a day of sums. */
export const MAX_QUOTA = 1_000_000_000
export const MAX_SCOPE_PATTERNS = 100
export const MAX_KEY_NAME = 64
/** A model uid as the service accepts it, with `*` and `?` for globs. */
const SCOPE_PATTERN = /^[\w.:*?-]{1,200}$/
export const KEY_NAME = /^[A-Za-z0-9][\w.:@-]{0,63}$/

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value)

/** The quotas at `at`, or undefined when absent; problems are added to `problems`. */
export function parseQuotas(value: unknown, at: string, problems: string[]): Quotas | undefined {
  if (value === undefined) return undefined
  if (!isObject(value)) {
    problems.push(`${at} must be an object with any of ${QUOTA_FIELDS.join(', ')}`)
    return undefined
  }

  const quotas: Quotas = {}
  for (const [field, limit] of Object.entries(value)) {
    if (!(QUOTA_FIELDS as readonly string[]).includes(field)) problems.push(`${at}.${field} is not a known quota; known quotas: ${QUOTA_FIELDS.join(', ')}`)
    else if (!Number.isInteger(limit) || (limit as number) < 1 || (limit as number) > MAX_QUOTA)
      problems.push(`${at}.${field} must be a whole number from 1 to ${MAX_QUOTA} (it is ${JSON.stringify(limit)?.slice(0, 40)}); leave it out for no limit`)
    else quotas[field as QuotaField] = limit as number
  }

  return quotas
}

/** The model scope at `at`, or undefined when absent (every model). */
export function parseScope(value: unknown, at: string, problems: string[]): string[] | undefined {
  if (value === undefined) return undefined
  if (!Array.isArray(value) || value.length === 0 || value.length > MAX_SCOPE_PATTERNS) {
    problems.push(`${at} must be a list of 1 to ${MAX_SCOPE_PATTERNS} model uids or patterns (\`qwen*\`); leave it out for every model`)
    return undefined
  }

  const patterns: string[] = []
  for (const [i, pattern] of value.entries()) {
    if (typeof pattern === 'string' && SCOPE_PATTERN.test(pattern)) patterns.push(pattern)
    else problems.push(`${at}[${i}] must be a model uid, or a pattern of one with * and ?, of 1 to 200 letters, digits and . _ - :`)
  }

  return patterns
}

/** A matcher for the scope's patterns: `*` any run of characters, `?` any one; everything else literally. */
export function scopeMatcher(patterns: readonly string[]): (uid: string) => boolean {
  const source = patterns.map((pattern) => pattern.replaceAll(/[.+^${}()|[\]\\]/g, String.raw`\$&`).replaceAll('*', '.*').replaceAll('?', '.')).join('|')
  const expression = new RegExp(`^(?:${source})$`)
  return (uid) => expression.test(uid)
}
