import {ServiceError} from '../kernel/errors.js'

/**
 * An endpoint as given (`-e`, SERVICE_ENDPOINT), without a trailing slash. Without its scheme, `127.0.0.1:9997`
 * fails inside fetch with "invalid URL" (or, as `localhost:9997`, parses as a URL of scheme `localhost:`), so
 * it is refused here with what to write instead.
 */
export function checkedEndpoint(endpoint: string, source: string): string {
  const trimmed = endpoint.trim().replace(/\/+$/, '')
  if (!/^https?:\/\//i.test(trimmed)) {
    const suggestion = /^[a-z][a-z\d+.-]*:\/\//i.test(trimmed) ? 'an http:// or https:// address' : `http://${trimmed}`
    throw new ServiceError(400, 'invalid_request', `${source} "${endpoint}" is not an http:// or https:// address; write it as ${suggestion}.`)
  }

  if (!URL.canParse(trimmed)) throw new ServiceError(400, 'invalid_request', `${source} "${endpoint}" is not a valid address; write it as http://<host>:<port>.`)
  return trimmed
}
