/**
 * Access tokens revoked before they expire: one token by its `jti` (a logout), or every token of a user issued
 * until a moment (an administrator's revocation). Kept in one file under SERVICE_HOME (mode 0600, rewritten
 * whole with write-file-atomic) so that a restarted service still refuses them. An entry is dropped once every
 * token it stands for has expired anyway, so the file holds at most a token lifetime's worth of logouts, and
 * at most `maxTokens` of those: past it a logout revokes all of that user's tokens issued until then instead,
 * which refuses more than asked and never less. A file that cannot be read refuses every token issued before
 * the service started, for the same reason.
 */
import {mkdir, readFile} from 'node:fs/promises'
import {dirname} from 'node:path'
import writeFileAtomic from 'write-file-atomic'

import type {Logger} from '../kernel/contracts.js'
import {PRIVATE_FILE, PRIVATE_FOLDER} from '../kernel/private-home.js'

/** Times are whole seconds since the epoch, as in the tokens' `iat` and `exp`. */
interface RevocationRecord {
  /** jti → the token's expiry. */
  tokens: Record<string, number>
  /** username → tokens issued before this second are refused. */
  users: Record<string, {notBefore: number; until: number}>
  /** Every user's tokens issued before this second are refused: set when the file could not be read, so that a damaged file refuses too much rather than too little. */
  everyone?: {notBefore: number; until: number}
}

export interface RevocationOptions {
  /** Where they are kept; in memory only when absent. */
  file?: string
  log?: Logger
  now?: () => number
  maxTokens?: number
}

const DEFAULT_MAX_TOKENS = 10_000

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value)

export class Revocations {
  private tokens = new Map<string, number>()
  private users = new Map<string, {notBefore: number; until: number}>()
  private everyone: {notBefore: number; until: number} | undefined
  private writing: Promise<void> = Promise.resolve()
  private readonly now: () => number
  private readonly maxTokens: number

  private constructor(private readonly options: RevocationOptions) {
    this.now = options.now ?? Date.now
    this.maxTokens = options.maxTokens ?? DEFAULT_MAX_TOKENS
  }

  /** Kept in memory only: for an AccessControl given none, and for tests. */
  static inMemory(now?: () => number): Revocations {
    return new Revocations({now})
  }

  /** Reads the file when there is one; a file that cannot be used is reported and counts as an empty one. */
  static async open(options: RevocationOptions & {lifetimeSeconds: number}): Promise<Revocations> {
    const revocations = new Revocations(options)
    if (options.file) await revocations.read(options.file, options.lifetimeSeconds)
    return revocations
  }

  /** Whether a token (by its claims) was revoked. */
  revoked({iat, jti, sub}: {sub: string; jti: string; iat: number}): boolean {
    return this.tokens.has(jti) || iat < this.earliestIssue(sub)
  }

  /** The earliest `iat` a token issued now for the user may carry so that it is not refused: a revocation counts whole seconds. */
  earliestIssue(username: string): number {
    return Math.max(this.users.get(username)?.notBefore ?? 0, this.everyone?.notBefore ?? 0)
  }

  /** Revokes one token until it expires anyway. */
  async revokeToken(claims: {sub: string; jti: string; exp: number; iat: number}): Promise<void> {
    this.prune()
    if (this.tokens.size < this.maxTokens) this.tokens.set(claims.jti, claims.exp)
    else this.revokeUserUntil(claims.sub, claims.iat + 1, claims.exp)
    await this.save()
  }

  /**
   * Revokes every token of the user issued until now, which stays refused for `lifetimeSeconds` (none lives
   * longer). Answers the second from which tokens are accepted again.
   */
  async revokeUser(username: string, lifetimeSeconds: number): Promise<number> {
    this.prune()
    // Rounded up: a token issued earlier in the same second carries that second as its `iat`.
    const notBefore = Math.ceil(this.now() / 1000)
    this.revokeUserUntil(username, notBefore, notBefore + lifetimeSeconds)
    await this.save()
    return notBefore
  }

  private revokeUserUntil(username: string, notBefore: number, until: number) {
    const previous = this.users.get(username)
    this.users.set(username, {notBefore: Math.max(notBefore, previous?.notBefore ?? 0), until: Math.max(until, previous?.until ?? 0)})
  }

  private prune() {
    const now = this.now() / 1000
    for (const [jti, exp] of this.tokens) if (exp <= now) this.tokens.delete(jti)
    for (const [username, {until}] of this.users) if (until <= now) this.users.delete(username)
    if (this.everyone && this.everyone.until <= now) this.everyone = undefined
  }

  /** Written one after another, so the last revocation's file is the one left. */
  private save(): Promise<void> {
    const {file, log} = this.options
    if (!file) return Promise.resolve()
    const record: RevocationRecord = {everyone: this.everyone, tokens: Object.fromEntries(this.tokens), users: Object.fromEntries(this.users)}
    const content = `${JSON.stringify({...record, version: 1})}\n`
    this.writing = this.writing.then(async () => {
      await mkdir(dirname(file), {mode: PRIVATE_FOLDER, recursive: true})
      await writeFileAtomic(file, content, {mode: PRIVATE_FILE})
    })
    return this.writing.catch((error: Error) => {
      this.writing = Promise.resolve()
      log?.error(`could not write the revoked tokens to ${file}: ${error.message}; they are refused until the service restarts`)
    })
  }

  private async read(file: string, lifetimeSeconds: number) {
    try {
      const {everyone, tokens, users} = JSON.parse(await readFile(file, 'utf8')) as Partial<RevocationRecord>
      if (!isRecord(tokens) || !isRecord(users)) throw new Error('it does not hold tokens and users')
      for (const [jti, exp] of Object.entries(tokens)) if (typeof exp === 'number') this.tokens.set(jti, exp)
      for (const [username, entry] of Object.entries(users))
        if (isRecord(entry) && typeof entry.notBefore === 'number' && typeof entry.until === 'number') this.users.set(username, {notBefore: entry.notBefore, until: entry.until})
      if (isRecord(everyone) && typeof everyone.notBefore === 'number' && typeof everyone.until === 'number') this.everyone = everyone
      this.prune()
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return
      const notBefore = Math.ceil(this.now() / 1000)
      this.everyone = {notBefore, until: notBefore + lifetimeSeconds}
      this.options.log?.warn(`the revoked tokens in ${file} cannot be read (${(error as Error).message}): every access token issued before now is refused, so users log in again`)
      await this.save()
    }
  }
}
