/**
 * The access-control config file given to `service-local --auth-config` (spec §2.6, Xinference's legacy
 * format). It is checked completely before the service starts: every problem is reported, each on its own
 * line and naming its place in the file, so one edit fixes them all. Messages never repeat a secret, a
 * password or an API key, since they end up in terminals and CI logs; they point at the entry instead.
 */
import {readFile} from 'node:fs/promises'
import {resolve} from 'node:path'

import {ServiceError} from '../kernel/errors.js'
import {describeJsonMistake} from '../kernel/json-text.js'
import {isPermission, type Permission, PERMISSIONS} from '../kernel/permissions.js'
import {KEY_NAME, MAX_KEY_NAME, parseQuotas, parseScope, type Quotas} from './key-limits.js'

export const ALGORITHMS = ['HS256', 'HS384', 'HS512'] as const
export type Algorithm = (typeof ALGORITHMS)[number]

/** An API key with the name it is accounted under (never the key itself) and what limits it. */
export interface ApiKey {
  key: string
  /** Its `name` in the config, else `<username>-key<n>` for the user's n-th key. */
  name: string
  /** Model uids or glob patterns it may use; the user's scope when absent, every model when neither has one. */
  models?: string[]
  /** Its own quotas, field by field over the user's. */
  quotas?: Quotas
}

export interface AuthUser {
  username: string
  password: string
  permissions: Permission[]
  apiKeys: ApiKey[]
  models?: string[]
  quotas?: Quotas
}

/** What a user's logins (access tokens) are accounted under: their keys are named apart from it. */
export const loginName = (username: string) => `${username}-login`

export interface AuthConfig {
  /** The file it was read from, for the log. */
  file: string
  algorithm: Algorithm
  secretKey: string
  tokenExpireInMinutes: number
  users: AuthUser[]
}

export const API_KEY = /^sk-[A-Za-z0-9]{13}$/

/** RFC 7518 §3.2: an HMAC key must be at least as long as the hash it is used with. */
const MIN_SECRET_BYTES: Record<Algorithm, number> = {HS256: 32, HS384: 48, HS512: 64}
/** Published in FastAPI's and Xinference's documentation, so anyone could sign tokens with it. */
const PUBLISHED_SECRETS = new Set(['09d25e094faa6ca2556c818166b7a9563b93f7099f6f0f4caa6cf63b88e8d3e7'])
const GENERATE_SECRET = 'generate one with `openssl rand -hex 32`'

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value)

/** Reads and checks the file; a ServiceError (code `invalid_auth_config`) lists every problem found. */
export async function loadAuthConfig(path: string): Promise<AuthConfig> {
  const file = resolve(path)
  let text: string
  try {
    text = await readFile(file, 'utf8')
  } catch (error) {
    throw invalid(file, [`cannot read it (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`])
  }

  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    // The parser's message quotes the text around the mistake, which may be a password: the mistake is located instead.
    throw invalid(file, [`it is not valid JSON: ${describeJsonMistake(text)}`])
  }

  return parseAuthConfig(value, file)
}

export function parseAuthConfig(value: unknown, file: string): AuthConfig {
  const problems: string[] = []
  if (!isObject(value)) throw invalid(file, ['it must be a JSON object with the fields auth_config and user_config'])
  unknownFields(value, 'the file', ['auth_config', 'user_config'], problems)

  const auth = value.auth_config
  let algorithm: Algorithm = 'HS256'
  let secretKey = ''
  let tokenExpireInMinutes = 0
  if (auth === undefined) problems.push('auth_config is missing; it holds algorithm, secret_key and token_expire_in_minutes')
  else if (isObject(auth)) {
    unknownFields(auth, 'auth_config', ['algorithm', 'secret_key', 'token_expire_in_minutes'], problems)
    if (auth.algorithm !== undefined) {
      if ((ALGORITHMS as readonly unknown[]).includes(auth.algorithm)) algorithm = auth.algorithm as Algorithm
      else problems.push(`auth_config.algorithm ${JSON.stringify(auth.algorithm)} is not supported; use HS256, HS384 or HS512 (tokens are signed with secret_key)`)
    }

    if (auth.secret_key === undefined || auth.secret_key === '') problems.push(`auth_config.secret_key is missing; ${GENERATE_SECRET}`)
    else if (typeof auth.secret_key !== 'string') problems.push(`auth_config.secret_key must be a string; ${GENERATE_SECRET}`)
    else {
      secretKey = auth.secret_key
      const weakness = secretWeakness(secretKey, algorithm)
      if (weakness) problems.push(`auth_config.secret_key is too weak: ${weakness}; ${GENERATE_SECRET}`)
    }

    if (auth.token_expire_in_minutes === undefined) problems.push('auth_config.token_expire_in_minutes is missing; it is how long a login lasts, e.g. 30')
    else if (!Number.isInteger(auth.token_expire_in_minutes) || (auth.token_expire_in_minutes as number) < 1)
      problems.push(`auth_config.token_expire_in_minutes must be a whole number of minutes, at least 1 (it is ${JSON.stringify(auth.token_expire_in_minutes)})`)
    else tokenExpireInMinutes = auth.token_expire_in_minutes as number
  } else problems.push('auth_config must be an object with algorithm, secret_key and token_expire_in_minutes')

  const users: AuthUser[] = []
  if (value.user_config === undefined) problems.push('user_config is missing; it lists the users, each with username, password, permissions and api_keys')
  else if (!Array.isArray(value.user_config) || value.user_config.length === 0)
    problems.push('user_config must be a non-empty array of users, each with username, password, permissions and api_keys')
  else {
    const usernames = new Map<string, string>()
    const keys = new Map<string, string>()
    const names = new Map<string, string>()
    const claimName = (name: string, at: string) => {
      if (names.has(name)) problems.push(`${at} is named "${name}", as ${names.get(name)} is; give it a unique \`name\` (usage and quotas are kept by name)`)
      else names.set(name, at)
    }
    for (const [index, entry] of value.user_config.entries()) {
      const at = `user_config[${index}]`
      if (!isObject(entry)) {
        problems.push(`${at} must be an object with username, password, permissions and api_keys`)
        continue
      }

      unknownFields(entry, at, ['username', 'password', 'permissions', 'api_keys', 'models', 'quotas'], problems)
      const user: AuthUser = {apiKeys: [], password: '', permissions: [], username: ''}
      if (typeof entry.username !== 'string' || entry.username.trim() === '') problems.push(`${at}.username is missing`)
      else if (usernames.has(entry.username)) problems.push(`${at}.username "${entry.username}" is already used by ${usernames.get(entry.username)}; usernames must be unique`)
      else {
        user.username = entry.username
        usernames.set(entry.username, at)
      }

      if (entry.password === undefined || entry.password === '') problems.push(`${at}.password is missing`)
      else if (typeof entry.password === 'string') user.password = entry.password
      else problems.push(`${at}.password must be a string`)

      if (entry.permissions === undefined) problems.push(`${at}.permissions is missing; list what the user may do, from ${PERMISSIONS.join(', ')}`)
      else if (Array.isArray(entry.permissions)) {
        for (const [i, permission] of entry.permissions.entries()) {
          if (isPermission(permission)) user.permissions.push(permission)
          else problems.push(`${at}.permissions[${i}] ${JSON.stringify(permission)} is not a permission; use one of ${PERMISSIONS.join(', ')}`)
        }
      } else problems.push(`${at}.permissions must be an array of permissions, from ${PERMISSIONS.join(', ')}`)

      if (entry.api_keys !== undefined && !Array.isArray(entry.api_keys)) problems.push(`${at}.api_keys must be an array of API keys`)
      if (user.username) claimName(loginName(user.username), `${at} (its logins)`)
      for (const [i, item] of ((entry.api_keys as unknown[] | undefined) ?? []).entries()) {
        const keyAt = `${at}.api_keys[${i}]`
        const apiKey = parseApiKey(item, keyAt, user.username ? `${user.username}-key${i + 1}` : '', problems)
        if (!apiKey) continue
        if (keys.has(apiKey.key)) problems.push(`${keyAt} is the same API key as ${keys.get(apiKey.key)}; every API key must be unique`)
        else {
          user.apiKeys.push(apiKey)
          keys.set(apiKey.key, keyAt)
          if (apiKey.name) claimName(apiKey.name, keyAt)
        }
      }

      const models = parseScope(entry.models, `${at}.models`, problems)
      if (models) user.models = models
      const quotas = parseQuotas(entry.quotas, `${at}.quotas`, problems)
      if (quotas) user.quotas = quotas
      users.push(user)
    }
  }

  if (problems.length > 0) throw invalid(file, problems)
  return {algorithm, file, secretKey, tokenExpireInMinutes, users}
}

const INVALID_KEY = 'is not a valid API key: it must be "sk-" followed by exactly 13 letters or digits'

/** A key as a string (Xinference's format) or as `{key, name, models, quotas}`. */
function parseApiKey(item: unknown, at: string, defaultName: string, problems: string[]): ApiKey | undefined {
  if (typeof item === 'string') {
    if (API_KEY.test(item)) return {key: item, name: defaultName}
    problems.push(`${at} ${INVALID_KEY}`)
    return undefined
  }

  if (!isObject(item)) {
    problems.push(`${at} must be an API key, or an object with key and optionally name, models and quotas`)
    return undefined
  }

  unknownFields(item, at, ['key', 'name', 'models', 'quotas'], problems)
  let valid = true
  if (typeof item.key !== 'string' || !API_KEY.test(item.key)) {
    problems.push(`${at}.key ${INVALID_KEY}`)
    valid = false
  }

  if (item.name !== undefined && (typeof item.name !== 'string' || !KEY_NAME.test(item.name))) {
    problems.push(`${at}.name must be 1 to ${MAX_KEY_NAME} letters, digits and . _ - : @, starting with a letter or digit`)
    valid = false
  }

  const models = parseScope(item.models, `${at}.models`, problems)
  const quotas = parseQuotas(item.quotas, `${at}.quotas`, problems)
  if (!valid) return undefined
  return {key: item.key as string, name: (item.name as string | undefined) ?? defaultName, ...(models ? {models} : {}), ...(quotas ? {quotas} : {})}
}

function secretWeakness(secret: string, algorithm: Algorithm): string | undefined {
  const bytes = Buffer.byteLength(secret)
  if (PUBLISHED_SECRETS.has(secret)) return 'it is the example key from published documentation, so anyone can sign tokens with it'
  if (bytes < MIN_SECRET_BYTES[algorithm]) return `${algorithm} needs at least ${MIN_SECRET_BYTES[algorithm]} bytes and it has ${bytes}`
  const distinct = new Set(secret).size
  if (distinct < 8) return `it uses only ${distinct} different characters`
  return undefined
}

function unknownFields(value: Record<string, unknown>, where: string, known: string[], problems: string[]) {
  for (const key of Object.keys(value))
    if (!known.includes(key)) problems.push(`${where === 'the file' ? '' : `${where}.`}${key} is not a known field${where === 'the file' ? '' : ` of ${where}`}; known fields: ${known.join(', ')}`)
}

function invalid(file: string, problems: string[]): ServiceError {
  const count = problems.length === 1 ? 'a problem' : `${problems.length} problems`
  return new ServiceError(400, 'invalid_auth_config', `the access-control config ${file} has ${count}; the service did not start:\n${problems.map((p) => `  - ${p}`).join('\n')}`)
}
