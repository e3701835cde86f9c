/**
 * Logging in and out: `POST /token` (OAuth2's password grant, throttled per username and per client address),
 * `POST /v1/auth/logout` (revokes the access token presented) and an administrator's
 * `POST /v1/auth/users/{username}/revoke` (revokes all of a user's tokens). See src/auth/ for the rules.
 */
import type {AccessControl} from '../../auth/access-control.js'
import type {RouteDefinition} from '../../kernel/contracts.js'

import {ServiceError} from '../../kernel/errors.js'
import {ADMIN, PUBLIC} from '../../kernel/permissions.js'
import * as s from '../../kernel/schema.js'
import {logoutReplySchema, tokenReplySchema, userRevocationReplySchema} from '../../protocol/service-info.js'
import {bearerCredential} from '../access.js'

/** OAuth2's password grant (RFC 6749 §4.3.2), which Xinference's clients send as JSON with only the credentials. */
const tokenSchema = s.object(
  {
    client_id: s.optional(s.string({description: 'Accepted and ignored.'})),
    client_secret: s.optional(s.secret({description: 'Accepted and ignored.'})),
    grant_type: s.optional(s.string({description: 'OAuth2 grant type; only `password` is supported.', enum: ['password']})),
    password: s.secret(),
    scope: s.optional(s.string({description: "Accepted and ignored: a token carries all of the user's permissions."})),
    username: s.string({maxLength: 256, minLength: 1}),
  },
  {title: 'TokenRequest'},
)

const authDisabled = () => new ServiceError(400, 'auth_disabled', 'access control is off on this service, so there is nothing to log in to or out of; every call works without credentials.')

export function authRoutes(access: AccessControl | undefined): RouteDefinition[] {
  const login: RouteDefinition<s.Infer<typeof tokenSchema>> = {
    acceptsForm: true,
    body: tokenSchema,
    async handler({body, clientAddress, log}) {
      if (!access) throw authDisabled()
      try {
        const token = await access.login(body.username, body.password, clientAddress)
        log.info(`user "${body.username}" logged in (username fingerprint ${access.usernameFingerprint(body.username)})`)
        // RFC 6749 §5.1: a response carrying a token must not be cached.
        return {body: token, headers: {'Cache-Control': 'no-store', Pragma: 'no-cache'}, kind: 'json' as const}
      } catch (error) {
        log.warn(`${access.refusedLoginEntry(body.username)} from ${clientAddress}${(error as ServiceError).code === 'login_throttled' ? ' (too many failed logins: not checked)' : ''}`)
        throw error
      }
    },
    example: {body: {password: 'change-me', username: 'admin'}},
    method: 'POST',
    path: '/token',
    permission: PUBLIC,
    response: tokenReplySchema.json,
    summary: 'Log in with a username and password (OAuth2 password grant, form-encoded or JSON) for an access token; 429 with Retry-After after too many failed logins',
    tag: 'service',
  }
  return [
    login,
    {
      async handler({headers, log}) {
        if (!access) throw authDisabled()
        const credential = bearerCredential(typeof headers.authorization === 'string' ? headers.authorization : undefined)
        if (!credential) throw new ServiceError(401, 'unauthorized', 'send the access token to revoke as `Authorization: Bearer <access token>`.')
        const {username} = await access.logout(credential)
        log.info(`user "${username}" logged out (username fingerprint ${access.usernameFingerprint(username)})`)
        return {body: {revoked: true, username}, kind: 'json', status: 200}
      },
      method: 'POST',
      path: '/v1/auth/logout',
      // The token presented is both the credential and what is revoked, so holding it is all the permission needed.
      permission: PUBLIC,
      response: logoutReplySchema.json,
      summary: 'Log out: revoke the access token sent in the Authorization header, until it would have expired',
      tag: 'service',
    },
    {
      async handler({log, params}) {
        if (!access) throw authDisabled()
        const validFrom = await access.revokeUser(params.username)
        log.info(`every access token of user "${params.username}" issued until ${validFrom.toISOString()} was revoked`)
        return {body: {tokens_valid_from: validFrom.toISOString(), username: params.username}, kind: 'json', status: 200}
      },
      example: {params: {username: 'reader'}},
      method: 'POST',
      path: '/v1/auth/users/:username/revoke',
      permission: ADMIN,
      response: userRevocationReplySchema.json,
      summary: "Revoke every access token a user holds (an administrator's logout of that user); their API keys are not affected",
      tag: 'service',
    },
  ]
}
