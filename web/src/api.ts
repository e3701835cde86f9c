/**
 * The one client of the service every page uses: the package's own browser-safe client library (src/client), at
 * the origin that served the page, with the login token kept for the browser tab (sessionStorage) when access
 * control is on. A 401 sends the person to the login page; every other refusal is shown with the server's message.
 */
import {Client} from '../../src/client/client.js'
import {ServiceError} from '../../src/kernel/errors.js'

const TOKEN_KEY = 'service-toolkit.token'

export const token = {
  get: () => sessionStorage.getItem(TOKEN_KEY) ?? undefined,
  set: (value: string) => sessionStorage.setItem(TOKEN_KEY, value),
  clear: () => sessionStorage.removeItem(TOKEN_KEY),
}

/**
 * Forgets the tab's token and has the service revoke it, so that a copy of it (a shared screen, a saved HAR file) is
 * worthless too. A token the service no longer takes needs no revoking, so the answer is not reported.
 */
export async function logOut(): Promise<void> {
  const leaving = token.get()
  token.clear()
  if (leaving) await fetch('/v1/auth/logout', {headers: {authorization: `Bearer ${leaving}`}, method: 'POST'}).catch(() => undefined)
}

/** Listeners told when the service refuses the token: it expired, or the service restarted with another secret. */
const onUnauthorized = new Set<() => void>()
export const whenUnauthorized = (listener: () => void) => {
  onUnauthorized.add(listener)
  return () => onUnauthorized.delete(listener)
}

/** fetch, with the token added, and a 401 reported to the app (the login page takes over). */
const authorizedFetch: typeof fetch = async (input, init = {}) => {
  const headers = new Headers(init.headers)
  const credential = token.get()
  if (credential && !headers.has('authorization')) headers.set('authorization', `Bearer ${credential}`)
  const response = await fetch(input, {...init, headers})
  if (response.status === 401 && !String(input).endsWith('/token')) for (const listener of onUnauthorized) listener()
  return response
}

export const client = new Client(location.origin, {fetch: authorizedFetch, onVersionMismatch: () => undefined})

/** What a person reads when a call fails: the server's sentence, which names the field or the permission. */
export function describeError(error: unknown): string {
  if (error instanceof ServiceError) {
    if (error.status === 403) return `Permission denied: ${error.message}`
    return error.message
  }

  return error instanceof Error ? error.message : String(error)
}

export const isAbort = (error: unknown) => (error as Error)?.name === 'AbortError'
