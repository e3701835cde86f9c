/**
 * The one HTTP caller of the service's JSON API, shared by the client library and the supervisor's remote
 * workers: a JSON request with a bearer credential, and an error reply read back into the ServiceError the
 * server sent. It uses only `fetch`, so the client stays browser-safe.
 */
import {ServiceError} from '../kernel/errors.js'

export interface JsonCall {
  method: string
  body?: unknown
  /** Sent as `Authorization: Bearer`. */
  credential?: string
  signal?: AbortSignal
}

/** Sends a JSON call (or a FormData body, for uploads); a network failure rejects as `fetch` rejects (the caller says what could not be reached). */
export function sendJson(fetcher: typeof fetch, url: string, {body, credential, method, signal}: JsonCall): Promise<Response> {
  const headers: Record<string, string> = {accept: 'application/json'}
  // Uploads go as multipart/form-data, whose boundary fetch writes into the content type itself. Told by its tag
  // rather than `instanceof FormData`, since reading that global loads Node's undici (see src/cli/http-fetch.ts).
  const form = Object.prototype.toString.call(body) === '[object FormData]'
  if (body !== undefined && !form) headers['content-type'] = 'application/json'
  if (credential) headers.authorization = `Bearer ${credential}`
  return fetcher(url, {body: body === undefined ? undefined : form ? (body as FormData) : JSON.stringify(body), headers, method, signal})
}

/**
 * The error for an answer the service never gives (an HTML page, a 200 that is not JSON): another server listens
 * at the endpoint, or a proxy answers for it. One line saying what came back and where to point instead, rather
 * than the page itself or JSON's SyntaxError.
 */
export function notTheServiceError(endpoint: string, call: string, response: Response): ServiceError {
  const type = response.headers.get('content-type')?.split(';')[0].trim() || 'no content type'
  const status = `${response.status}${response.statusText ? ` ${response.statusText}` : ''}`
  return new ServiceError(
    502,
    'unexpected_response',
    `the server at ${endpoint} is not the service: it answered ${call} with ${status} (${type}); point to the service with --endpoint or SERVICE_ENDPOINT.`,
  )
}

/**
 * A streaming call's body, checked to be an event stream: any other (a web server's 200 page) holds no event, so
 * the stream would end with no answer and no error.
 */
export async function eventStreamBody(endpoint: string, call: string, response: Response): Promise<ReadableStream<Uint8Array>> {
  if (/^text\/event-stream\b/i.test(response.headers.get('content-type') ?? '')) return response.body!
  await response.body?.cancel()
  throw notTheServiceError(endpoint, call, response)
}

/**
 * The error a failed reply carries: the service's `{error: {message, code, param}}` (OpenAI's shape), an
 * `{error: "…"}` or `{detail: "…"}` (Xinference's); undefined for a reply that names none (a proxy's HTML page).
 */
export async function errorFromReply(response: Response): Promise<{error?: ServiceError; text: string}> {
  const text = await response.text()
  try {
    const body = JSON.parse(text) as {error?: {message?: string; code?: string; param?: string} | string; detail?: string}
    const error = typeof body.error === 'object' && body.error !== null ? body.error : {message: body.error ?? body.detail}
    if (typeof error.message !== 'string') return {text}
    return {error: new ServiceError(response.status, error.code ?? String(response.status), error.message, error.param), text}
  } catch {
    return {text}
  }
}
