/**
 * An access-control config for tests: `root` (admin), and for every other permission P a user `only-P` with
 * just P and a user `all-but-P` with every other one, so a test can show a route needs exactly its permission.
 * Tokens of every kind a client might send are minted here with jose, with any expiry, rather than waited for.
 */
import {createHash, randomUUID} from 'node:crypto'
import {writeFile} from 'node:fs/promises'
import {join} from 'node:path'
import {SignJWT, UnsecuredJWT} from 'jose'

import {PERMISSIONS} from '../../src/kernel/permissions.js'

export const AUTH_SECRET = '3f8a1c9e7b2d4f6a8c0e1b3d5f7a9c2e4b6d8f0a1c3e5b7d9f2a4c6e8b0d1f3a'
export const OTHER_SECRET = 'c0ffee4d2b8a6e1f9c3d7b5a0e8f2c6d4b9a1e7f3c5d8b2a6e0f4c9d1b7a3e5f'
export const GRANTABLE = PERMISSIONS.filter((permission) => permission !== 'admin')

/** Deterministic and valid: `sk-` and 13 hexadecimal digits. */
export const apiKeyOf = (username: string) => `sk-${createHash('sha256').update(username).digest('hex').slice(0, 13)}`
export const passwordOf = (username: string) => `pw of ${username}!`

export const TEST_USERS: Array<{username: string; permissions: string[]}> = [
  {permissions: ['admin'], username: 'root'},
  {permissions: [], username: 'nobody'},
  ...GRANTABLE.flatMap((permission) => [
    {permissions: [permission], username: `only-${permission}`},
    {permissions: GRANTABLE.filter((p) => p !== permission), username: `all-but-${permission}`},
  ]),
]

export function testAuthConfig(options: {algorithm?: string; expireInMinutes?: number} = {}) {
  return {
    auth_config: {algorithm: options.algorithm ?? 'HS256', secret_key: AUTH_SECRET, token_expire_in_minutes: options.expireInMinutes ?? 30},
    user_config: TEST_USERS.map(({permissions, username}) => ({api_keys: [apiKeyOf(username)], password: passwordOf(username), permissions, username})),
  }
}

export async function writeTestAuthConfig(directory: string, config: unknown = testAuthConfig()): Promise<string> {
  const file = join(directory, 'auth.json')
  await writeFile(file, JSON.stringify(config, null, 2))
  return file
}

/** A JWT like the service's, with the claims, key and algorithm the test chooses; `expiresIn` in seconds may be negative. */
export function mintToken({algorithm = 'HS256', expiresIn = 600, now = Date.now(), secret = AUTH_SECRET, sub}: {sub: string; expiresIn?: number; now?: number; secret?: string; algorithm?: string}) {
  const issuedAt = Math.floor(now / 1000)
  return new SignJWT({scopes: ['admin']})
    .setProtectedHeader({alg: algorithm, typ: 'JWT'})
    .setSubject(sub)
    .setJti(randomUUID())
    .setIssuedAt(issuedAt)
    .setExpirationTime(issuedAt + expiresIn)
    .sign(new TextEncoder().encode(secret))
}

/** `alg: none`: claims anyone can write, with no signature. */
export const unsignedToken = (sub: string) => new UnsecuredJWT({scopes: ['admin']}).setSubject(sub).setExpirationTime('10m').encode()
