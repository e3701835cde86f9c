/**
 * Logins saved by `servicectl login`, one file per endpoint at `<SERVICE_HOME>/auth/<sha256(endpoint)>` as
 * Xinference keeps them, readable by the user only; and the one line the CLI prints when the service refuses
 * a credential, which says what to do about it.
 */
import {createHash} from 'node:crypto'
import {readFileSync} from 'node:fs'
import {mkdir, rename, rm, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import type {ServiceErrorShape} from '../kernel/errors.js'

export interface SavedLogin {
  endpoint: string
  username: string
  access_token: string
  expires_at: string
}

/** `http://host:9997/` and `http://host:9997` are the same service. */
const normalize = (endpoint: string) => endpoint.replace(/\/+$/, '')

export const loginFile = (home: string, endpoint: string) => join(home, 'auth', createHash('sha256').update(normalize(endpoint)).digest('hex'))

/** Written whole under a temporary name and renamed, so a reader never sees half a file, with mode 0600 from the start. */
export async function saveLogin(home: string, login: SavedLogin): Promise<string> {
  const file = loginFile(home, login.endpoint)
  await mkdir(join(home, 'auth'), {mode: 0o700, recursive: true})
  const temporary = `${file}.${process.pid}.tmp`
  await writeFile(temporary, JSON.stringify({...login, endpoint: normalize(login.endpoint)}) + '\n', {mode: 0o600})
  await rename(temporary, file)
  return file
}

/** The saved login for an endpoint; none if there is no file or it cannot be read. */
export function readLogin(home: string, endpoint: string): SavedLogin | undefined {
  try {
    const login = JSON.parse(readFileSync(loginFile(home, endpoint), 'utf8')) as Partial<SavedLogin>
    return typeof login.access_token === 'string' && typeof login.username === 'string' ? (login as SavedLogin) : undefined
  } catch {
    return undefined
  }
}

/** Deletes the saved login for an endpoint, if there is one. */
export async function forgetLogin(home: string, endpoint: string): Promise<void> {
  await rm(loginFile(home, endpoint), {force: true})
}

/** Where the credential of a failed call came from. */
export type CredentialSource = {kind: 'api-key'} | {kind: 'login'; username: string} | undefined

/**
 * The line for a 401 or 403: what went wrong and what to do, in the CLI's terms. Undefined for other errors,
 * and for answers whose own message already says it (a refused login, a missing permission).
 */
export function authFailureLine(error: ServiceErrorShape, endpoint: string, source: CredentialSource): string | undefined {
  if (error.status !== 401 || error.code === 'login_failed') return undefined
  const login = (username = '<name>') => `\`servicectl login -e ${endpoint} --username ${username}\``
  if (!source) return `${endpoint} has access control on; log in with ${login()}, or pass an API key with --api-key.`
  if (source.kind === 'api-key') return `${endpoint} refused the API key given with --api-key (or SERVICE_API_KEY); check it, or log in with ${login()} instead.`
  if (error.code === 'token_expired') return `your login to ${endpoint} as ${source.username} expired; log in again with ${login(source.username)}.`
  if (error.code === 'token_revoked') return `your login to ${endpoint} as ${source.username} was revoked; log in again with ${login(source.username)}.`
  return `your saved login to ${endpoint} as ${source.username} is no longer accepted; log in again with ${login(source.username)}.`
}
