/**
 * Who a caller is and what they may do, when the service runs with `--auth-config`. Callers prove who they
 * are with an API key from the config, or with an access token (a JWT signed with the config's secret) that
 * `login` hands out for a username and password. Knows nothing of HTTP: the server passes it the credential
 * and the permission a route needs.
 */
import {createHash, createHmac, randomBytes, randomUUID, timingSafeEqual} from 'node:crypto'

import type {ApiKey, AuthConfig, AuthUser} from './config.js'

import {ServiceError} from '../kernel/errors.js'
import {ADMIN, type Permission} from '../kernel/permissions.js'
import {API_KEY, loginName} from './config.js'
import {type Quotas, scopeMatcher} from './key-limits.js'
import {DEFAULT_LOGIN_LIMITS, type LoginLimits, LoginThrottle} from './login-throttle.js'
import {QuotaWindows} from './quota-windows.js'
import {Revocations} from './revocations.js'

export interface Caller {
  username: string
  permissions: ReadonlySet<Permission>
  /** How the caller proved who they are. */
  via: 'api_key' | 'token'
  /** What its usage is kept under: the API key's name, or the user's logins' (config.ts); never a secret. */
  keyName: string
  /** The names whose usage it may read: its own key's, or with a login every key of the user's and their logins'. */
  usageKeys: readonly string[]
  quotas?: Quotas
  /** The model uids or patterns it may use; every model when absent. */
  models?: readonly string[]
  /** Whether it may use the model; true for every model without a scope. */
  inScope(uid: string): boolean
}

const EVERY_MODEL = () => true

function callerOf(user: AuthUser, via: Caller['via'], key?: ApiKey): Caller {
  const models = key?.models ?? user.models
  const quotas = user.quotas || key?.quotas ? {...user.quotas, ...key?.quotas} : undefined
  return {
    inScope: models ? scopeMatcher(models) : EVERY_MODEL,
    keyName: key?.name ?? loginName(user.username),
    usageKeys: key ? [key.name] : [loginName(user.username), ...user.apiKeys.map(({name}) => name)],
    permissions: new Set(user.permissions),
    username: user.username,
    via,
    ...(models ? {models} : {}),
    ...(quotas ? {quotas} : {}),
  }
}

/** The OAuth2 token response (RFC 6749 §5.1). */
export interface TokenResponse {
  access_token: string
  token_type: 'bearer'
  /** Seconds until the token expires. */
  expires_in: number
}


/** Fixed-length digests, so that comparing them in constant time does not reveal lengths either. */
const digest = (text: string) => createHash('sha256').update(text).digest()

/** jose is loaded by the first token issued or checked: a service without access control, or used only with API keys, never needs it. */
const loadJose = () => import('jose')

export class AccessControl {
  private readonly key: Uint8Array
  private readonly users = new Map<string, {passwordDigest: Buffer; user: AuthUser}>()
  private readonly apiKeys: Array<{digest: Buffer; caller: Caller}> = []
  private readonly logins = new Map<string, Caller>()
  /** Each key's use of its quotas in the current minute and day; the usage accounting counts into it. */
  readonly quotas: QuotaWindows
  /** Compared against when the username is unknown, so a failed login takes as long whether or not the user exists. */
  private readonly decoy = digest(randomBytes(32).toString('hex'))
  private readonly now: () => number
  private readonly throttle: LoginThrottle
  private readonly revocations: Revocations

  constructor(
    private readonly config: AuthConfig,
    options: {now?: () => number; loginLimits?: LoginLimits; revocations?: Revocations} = {},
  ) {
    this.now = options.now ?? Date.now
    this.throttle = new LoginThrottle(options.loginLimits ?? DEFAULT_LOGIN_LIMITS, this.now)
    this.revocations = options.revocations ?? Revocations.inMemory(this.now)
    this.key = new TextEncoder().encode(config.secretKey)
    this.quotas = new QuotaWindows(this.now)
    for (const user of config.users) {
      this.users.set(user.username, {passwordDigest: digest(user.password), user})
      this.logins.set(user.username, callerOf(user, 'token'))
      for (const key of user.apiKeys) this.apiKeys.push({caller: callerOf(user, 'api_key', key), digest: digest(key.key)})
    }
  }

  /** For the service log; names no secret. */
  get summary(): string {
    return `${this.users.size} users, ${this.apiKeys.length} API keys, ${this.config.algorithm} tokens valid for ${this.config.tokenExpireInMinutes} minutes (${this.config.file})`
  }

  /**
   * Eight hex digits that stand for a username in the log, the same for the same name. Keyed with the
   * config's secret, so that someone holding only the log cannot test guesses against it.
   */
  usernameFingerprint(username: string): string {
    return createHmac('sha256', this.key).update(username).digest('hex').slice(0, 8)
  }

  /** The log line of a refused login. It never quotes the username: people type their password into that field too. */
  refusedLoginEntry(username: string): string {
    return `login refused for ${this.users.has(username) ? 'a configured user' : 'an unknown username'} (username fingerprint ${this.usernameFingerprint(username)})`
  }

  /** Seconds an access token lives. */
  get tokenLifetime(): number {
    return this.config.tokenExpireInMinutes * 60
  }

  /**
   * Checks a username and password, unless the username or the client's address has used up its failed logins
   * (login-throttle.ts), and issues an access token carrying the user and their permissions.
   */
  async login(username: string, password: string, clientAddress: string): Promise<TokenResponse> {
    this.throttle.check(username, clientAddress)
    const entry = this.users.get(username)
    const matches = timingSafeEqual(digest(password), entry?.passwordDigest ?? this.decoy)
    if (!entry || !matches) {
      this.throttle.failed(username, clientAddress)
      throw new ServiceError(401, 'login_failed', 'incorrect username or password.')
    }

    this.throttle.succeeded(username)
    // Not before the second from which an administrator's revocation accepts the user's tokens again.
    const issuedAt = Math.max(Math.floor(this.now() / 1000), this.revocations.earliestIssue(username))
    const lifetime = this.tokenLifetime
    const {SignJWT} = await loadJose()
    const token = await new SignJWT({scopes: entry.user.permissions})
      .setProtectedHeader({alg: this.config.algorithm, typ: 'JWT'})
      .setSubject(username)
      .setJti(randomUUID())
      .setIssuedAt(issuedAt)
      .setExpirationTime(issuedAt + lifetime)
      .sign(this.key)
    return {access_token: token, expires_in: lifetime, token_type: 'bearer'}
  }

  /**
   * The caller a bearer credential belongs to: an API key (`sk-` and 13 letters or digits), else an access
   * token. A token's permissions are read from the config, not from the token, so a token issued before the
   * config changed cannot keep permissions the user no longer has.
   */
  async authenticate(credential: string): Promise<Caller> {
    if (API_KEY.test(credential)) {
      const candidate = digest(credential)
      let owner: Caller | undefined
      // Every key is compared, so the time taken does not depend on which key (if any) matched.
      for (const key of this.apiKeys) if (timingSafeEqual(key.digest, candidate)) owner = key.caller
      if (!owner) throw new ServiceError(401, 'invalid_credentials', 'the API key is not valid for this service.')
      return owner
    }

    const claims = await this.unrevokedClaims(credential)
    const caller = this.logins.get(claims.sub)
    if (!caller) throw new ServiceError(401, 'invalid_credentials', `the access token is for the user "${claims.sub}", who is no longer in the access-control config.`)
    return caller
  }

  /** Revokes the access token presented (a logout); an API key cannot be revoked this way. Answers whose token it was. */
  async logout(credential: string): Promise<{username: string}> {
    if (API_KEY.test(credential))
      throw new ServiceError(400, 'invalid_request', 'an API key cannot be logged out: it is valid until an administrator removes it from the access-control config. Log out with the access token from POST /token.')
    const claims = await this.unrevokedClaims(credential)
    await this.revocations.revokeToken(claims)
    return {username: claims.sub}
  }

  /** Revokes every access token of a user issued until now; answers when tokens are accepted again (the next login's). */
  async revokeUser(username: string): Promise<Date> {
    if (!this.users.has(username))
      throw new ServiceError(404, 'not_found', 'there is no user by that username in the access-control config; check `username` against its user_config.', 'username')
    return new Date((await this.revocations.revokeUser(username, this.tokenLifetime)) * 1000)
  }

  /** The claims of an access token this service signed, that has not expired and was not revoked. */
  private async unrevokedClaims(credential: string) {
    const claims = await this.verifiedClaims(credential)
    if (this.revocations.revoked(claims))
      throw new ServiceError(401, 'token_revoked', 'the access token was revoked (logged out, or revoked by an administrator); log in again for a new one (POST /token, or `servicectl login`).')
    return claims
  }

  /** The claims of an access token this service signed and that has not expired. */
  private async verifiedClaims(credential: string): Promise<{sub: string; jti: string; iat: number; exp: number}> {
    const {jwtVerify} = await loadJose()
    try {
      const {payload} = await jwtVerify(credential, this.key, {algorithms: [this.config.algorithm], currentDate: new Date(this.now()), requiredClaims: ['sub', 'exp', 'iat', 'jti']})
      return payload as {sub: string; jti: string; iat: number; exp: number}
    } catch (error) {
      // jose checks the signature before the claims, so only a token this service signed can be "expired".
      const {code, payload} = error as {code?: string; payload?: {exp?: number}}
      if (code === 'ERR_JWT_EXPIRED' && payload?.exp !== undefined)
        throw new ServiceError(401, 'token_expired', `the access token expired at ${new Date(payload.exp * 1000).toISOString()}; log in again for a new one (POST /token, or \`servicectl login\`).`)
      throw new ServiceError(
        401,
        'invalid_credentials',
        'the bearer credential is neither an API key nor an access token issued by this service (a password is not accepted here); send an API key, or log in for an access token (POST /token, or `servicectl login`).',
      )
    }
  }

  /** Whether the caller has the permission, or is admin. */
  allows(caller: Caller, permission: Permission): boolean {
    return caller.permissions.has(ADMIN) || caller.permissions.has(permission)
  }

  /** Throws a 429 when the caller's key has already spent one of its quotas in the current window. */
  checkQuotas(caller: Caller): void {
    this.quotas.check(caller.keyName, caller.quotas, describeCaller(caller))
  }

  /** Throws a 403 naming the model and the caller's scope unless the caller may use the model. */
  requireInScope(caller: Caller, uid: string): void {
    if (caller.inScope(uid)) return
    throw new ServiceError(
      403,
      'forbidden',
      `${describeCaller(caller)} may use only the models ${caller.models?.map((pattern) => `"${pattern}"`).join(', ')}, and not "${uid}"; ask an administrator to add it to the key's models in the access-control config.`,
      'model',
    )
  }

  /** Throws a 403 naming the permission unless the caller has it (or is admin). `what` names the route. */
  authorize(caller: Caller, permission: Permission, what: string): void {
    if (this.allows(caller, permission)) return
    const who = caller.via === 'api_key' ? `the API key of user "${caller.username}"` : `user "${caller.username}"`
    throw new ServiceError(403, 'forbidden', `${who} does not have the permission ${permission}, which ${what} needs; ask an administrator to add it to the user's permissions in the access-control config.`)
  }
}

/** The caller in a message: the key by its name, never the key itself. */
const describeCaller = (caller: Caller) => (caller.via === 'api_key' ? `the API key "${caller.keyName}" of user "${caller.username}"` : `user "${caller.username}"`)
