/**
 * What a web browser may do with the service. Any page a person opens can make their browser send requests to
 * the service (a form's POST, `fetch` in `no-cors` mode) and, by pointing its own name at 127.0.0.1 (DNS
 * rebinding), even read the answers; neither needs a credential when access control is off. So every request,
 * to the API, /ui and /docs alike, must name the service in `Host` as a page of the service's own would, and a
 * request a page sends must come from the service's own origin or from one the operator allows:
 *
 * - `Host` is a loopback name (`localhost`, `*.localhost`), an IP literal, this machine's name, the address the
 *   service listens on, or a name in `--allowed-hosts`. An IP literal is no rebinding: a browser sends one only
 *   to the address its URL names, so the page calling is of that address and the origin check below applies.
 * - `Origin`, when a browser sends one, is the origin `Host` names or one in `--allowed-origins`; a request
 *   that says it comes from another site's page (`Sec-Fetch-Site`) without naming its origin is refused too,
 *   unless it is a person following a link (a top-level GET), whose answer the linking page cannot read.
 *
 * Clients that are not browsers (curl, SDKs, servicectl, workers) send no `Origin` and pass. A refusal is 403 as
 * Ollama's and Vite's are: 421 (Misdirected Request) would invite the client to retry on another connection,
 * which changes nothing here. An allowed origin gets CORS answers, its preflights included, for any path alike,
 * so that a preflight tells nothing about which routes exist.
 */
import type Koa from 'koa'

import {isIP} from 'node:net'
import {hostname} from 'node:os'

import {ServiceError} from '../kernel/errors.js'
import {ALLOWED_HOSTS_ENV, ALLOWED_ORIGINS_ENV} from '../kernel/settings.js'
import {VERSION_HEADER} from '../protocol/version.js'
import {ANTHROPIC_REQUEST_ID_HEADER, REQUEST_ID_HEADER} from './request-id.js'

export interface BrowserPolicy {
  /** The address the service listens on (`--host`), which is a name it answers to. */
  listenHost: string
  /** More names `Host` may give: exact names, `*.example.com` for the domain and its subdomains, `*` for any. */
  allowedHosts: string[]
  /** Origins of other sites whose pages may call the service: `https://app.example.com`, `http://localhost:*`, `*` for any. */
  allowedOrigins: string[]
}

/** The methods the API's routes take, as a preflight answer lists them. */
const METHODS = 'GET, HEAD, POST, PUT, DELETE'
/** How long a browser may keep a preflight's answer (Chromium keeps it at most 2 hours). */
const PREFLIGHT_MAX_AGE_S = 600
/** Header names a preflight asks for, echoed when they are a list of names (an SDK sends a dozen of its own) and not longer than this. */
const HEADER_LIST = /^[A-Za-z0-9-]+(?: *, *[A-Za-z0-9-]+)*$/
const MAX_HEADER_LIST_LENGTH = 2000
/** A Host header as HTTP has it: a name, an IPv4 address or a bracketed IPv6 one, and a port. */
const HOST_HEADER = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+)(?::\d{1,5})?$/
const ORIGIN = /^[a-z][a-z0-9+.-]*:\/\/[^/?#@\s]+$/i

/** An entry of --allowed-hosts as a test of a name: `*` any, `*.example.com` (or `.example.com`) the domain and its subdomains, else the name. */
function hostPattern(entry: string): (name: string) => boolean {
  const name = entry.toLowerCase().replace(/\.$/, '')
  if (name === '*') return () => true
  const domain = /^\*?\.(.+)$/.exec(name)?.[1]
  return domain === undefined ? (candidate) => candidate === name : (candidate) => candidate === domain || candidate.endsWith(`.${domain}`)
}

/** An entry of --allowed-origins as a test of an origin: `*` any, else the origin, where `*` stands for any part (`http://localhost:*`). */
function originPattern(entry: string): (origin: string) => boolean {
  if (entry === '*') return () => true
  const parts = entry.toLowerCase().replace(/\/+$/, '').split('*').map((part) => part.replaceAll(/[.+?^${}()|[\]\\]/g, '\\$&'))
  const pattern = new RegExp(`^${parts.join('[^/]*')}$`)
  return (origin) => pattern.test(origin.toLowerCase())
}

export function browserGuard({allowedHosts, allowedOrigins, listenHost}: BrowserPolicy): Koa.Middleware {
  const ownNames = new Set(['localhost', hostname().toLowerCase(), listenHost.toLowerCase().replaceAll(/^\[|\]$/g, '')])
  const hostPatterns = allowedHosts.map(hostPattern)
  const originPatterns = allowedOrigins.map(originPattern)

  const hostAllowed = (name: string) => {
    const bare = name.replaceAll(/^\[|\]$/g, '').replace(/\.$/, '')
    return isIP(bare) !== 0 || ownNames.has(bare) || bare.endsWith('.localhost') || hostPatterns.some((allows) => allows(bare))
  }

  /** The request's own origin as `Host` names it, in the scheme of the origin that calls: a default port left out as browsers do. */
  const isOwnOrigin = (origin: string, host: string) => {
    const calling = new URL(origin)
    return URL.canParse(`${calling.protocol}//${host}`) && new URL(`${calling.protocol}//${host}`).host === calling.host
  }

  const originAllowed = (origin: string) => originPatterns.some((allows) => allows(origin))

  return async (ctx, next) => {
    // On every answer: no guessing a type from the bytes, and no page of the service inside another site's frame.
    // The pages (/ui, /docs) replace this policy with their own; an API answer needs none of what it forbids.
    ctx.set({'Content-Security-Policy': "default-src 'none'; frame-ancestors 'none'", 'X-Content-Type-Options': 'nosniff', 'X-Frame-Options': 'DENY'})
    const host = ctx.get('host')
    const name = HOST_HEADER.exec(host)?.[1]?.toLowerCase()
    if (host !== '' && (name === undefined || !hostAllowed(name)))
      throw new ServiceError(
        403,
        'forbidden',
        `this service does not answer to the name in the Host header (${JSON.stringify(host.slice(0, 100))}), which a web page could have pointed at it; to serve that name, add it to --allowed-hosts or ${ALLOWED_HOSTS_ENV}.`,
      )

    const origin = ctx.get('origin')
    if (origin) {
      const own = ORIGIN.test(origin) && isOwnOrigin(origin, host)
      if (!own && !originAllowed(origin))
        throw new ServiceError(
          403,
          'forbidden',
          `requests from web pages at ${JSON.stringify(origin.slice(0, 100))} (the Origin header) are refused; to let a browser app there call this service, add its origin to --allowed-origins or ${ALLOWED_ORIGINS_ENV}.`,
        )
      if (!own) {
        ctx.vary('Origin')
        ctx.set('Access-Control-Allow-Origin', origin)
        ctx.set('Access-Control-Expose-Headers', [REQUEST_ID_HEADER, ANTHROPIC_REQUEST_ID_HEADER, VERSION_HEADER].join(', '))
        if (ctx.method === 'OPTIONS' && ctx.get('access-control-request-method')) return answerPreflight(ctx)
      }
    } else if (/^(cross|same)-site$/i.test(ctx.get('sec-fetch-site')) && !isFollowedLink(ctx)) {
      throw new ServiceError(
        403,
        'forbidden',
        `this request comes from another site's page (Sec-Fetch-Site: ${ctx.get('sec-fetch-site')}) that does not say which (no Origin header); browser apps the operator allows (--allowed-origins or ${ALLOWED_ORIGINS_ENV}) call with fetch, which sends it.`,
      )
    }

    await next()
  }
}

/** A person following a link or typing an address: a top-level page load, which only shows the answer to them. */
const isFollowedLink = (ctx: Koa.Context) =>
  (ctx.method === 'GET' || ctx.method === 'HEAD') && ctx.get('sec-fetch-mode') === 'navigate' && ctx.get('sec-fetch-dest') === 'document'

function answerPreflight(ctx: Koa.Context): void {
  const asked = ctx.get('access-control-request-headers')
  ctx.status = 204
  ctx.set({'Access-Control-Allow-Methods': METHODS, 'Access-Control-Max-Age': String(PREFLIGHT_MAX_AGE_S)})
  ctx.vary('Access-Control-Request-Headers')
  if (asked.length <= MAX_HEADER_LIST_LENGTH && HEADER_LIST.test(asked)) ctx.set('Access-Control-Allow-Headers', asked)
  // Chromium asks before a public site's page calls a service on this machine or its network (Private Network Access).
  if (ctx.get('access-control-request-private-network') === 'true') ctx.set('Access-Control-Allow-Private-Network', 'true')
}
