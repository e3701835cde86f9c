/**
 * `createApp` composes the Koa application from the kernel's routes (core and plugin alike); it never
 * listens. Order: request id → error boundary → request logging and version header → what browsers may do (Host,
 * Origin, CORS, security headers) → access control for requests no route takes → routes (each guarded by its
 * permission first) → method checks → 404.
 */
import {createRequire} from 'node:module'
import {Readable} from 'node:stream'

import Koa from 'koa'

import type {AccessControl} from '../auth/access-control.js'
import type {ErrorStyle, Logger, ModelDirectory, ModelScope, ModelUse, RouteDefinition, RouteRequest} from '../kernel/contracts.js'
import type {OperationMap} from '../kernel/operations.js'
import type {NamedRequests} from './named-requests.js'

import {ServiceError, type ServiceErrorShape, toAnthropicErrorBody, toErrorAnswerBody, toOpenAiErrorBody, toServiceError} from '../kernel/errors.js'
import {describeJsonMistake} from '../kernel/json-text.js'
import {logServiceEvents, ServiceEvents} from '../kernel/observability.js'
import {CLUSTER, requiredPermission} from '../kernel/permissions.js'
import {SERVICE_AUTHORITY} from '../kernel/reach.js'
import {VERSION_HEADER} from '../protocol/version.js'
import {formatBytes} from '../util/format.js'
import {accessGuards, ANTHROPIC_PREFIX, clusterGuard, OLLAMA_PREFIX} from './access.js'
import {browserGuard, type BrowserPolicy} from './browser-guard.js'
import {holdModel} from './model-use.js'
import {filesOf, parseMultipart} from './multipart.js'
import {answerCheck, failsUndeclaredAnswers} from './produces.js'
import {checkQuery} from './query.js'
import {observedModels, reportRequests} from './request-events.js'
import {assignRequestIds} from './request-id.js'
import {toServerSentEvents} from './sse.js'
import {serveWebUi} from './web-ui.js'

/**
 * The router's CommonJS build, on purpose: its ES build imports `node:http` as an ES module, and Node then reads
 * every export of `node:http`, whose `WebSocket` getter loads Node's bundled undici (fetch and WebSockets),
 * about 5 MB the service never uses (nodejs/node#59686). listen.ts loads `node:http` the same way.
 */
const {Router} = createRequire(import.meta.url)('@koa/router') as typeof import('@koa/router')

/** Request bodies beyond this are refused with 413 unless a route takes more; a chat with long context still fits easily. */
const JSON_LIMIT = 16 * 1024 * 1024

export interface AppOptions {
  routes: Array<{definition: RouteDefinition; plugin: string}>
  models: ModelDirectory
  /** Holds the model each inference request names while it is answered, launching it on demand (model-use.ts); without it, models are used as they run. */
  modelUse?: ModelUse
  log: Logger
  version: string
  /** When absent, access control is off: every route is open and credentials are ignored. */
  access?: AccessControl
  /**
   * The shared secret of `cluster` routes. When set, they need it; when not, they are open without access
   * control and closed with it.
   */
  clusterToken?: string
  /**
   * Aborted, with a ServiceError as its reason, when the service begins to shut down: requests still arriving
   * are refused with it, and live streams end with it as their error event.
   */
  shutdown?: AbortSignal
  /** Where every finished request is reported; without it the app makes its own, which logs an access line. */
  events?: ServiceEvents
  /** Where uploads to multipart routes are written while their request lasts (made 0700); a new private folder in the system's temporary folder unless given. */
  uploadDir?: string
  /** Serve the web interface at /ui and redirect `/` to it (service-local and the supervisor; workers do not). */
  webUi?: boolean
  /** Who may call from a browser (browser-guard.ts); without it, the service's own origin at loopback names and IP addresses only. */
  browsers?: BrowserPolicy
  /** Where requests named with a body's `request_id` are entered while they run, so that they can be aborted by it. */
  namedRequests?: NamedRequests
  /** Fail a route's answer of a media type it does not declare, rather than log it (see produces.ts); by SERVICE_UNDECLARED_ANSWERS unless given. */
  failUndeclaredAnswers?: boolean
}

/** Xinference's clients read `detail` beside OpenAI's envelope; Ollama's read `error` as the message itself. */
const errorBody = (style: ErrorStyle, error: ServiceErrorShape) =>
  style === 'anthropic' ? toAnthropicErrorBody(error) : style === 'ollama' ? {error: error.message} : toErrorAnswerBody(error)
/** An error after a stream started: OpenAI clients read a last `data:` event, Anthropic's an `event: error`. */
const errorEvent = (style: ErrorStyle, error: ServiceErrorShape) => (style === 'anthropic' ? {data: toAnthropicErrorBody(error), event: 'error'} : toOpenAiErrorBody(error))

/** What a request's caller may use without access control: every model. */
const EVERY_MODEL: ModelScope = {has: () => true, require: () => {}}

/**
 * The directory as a request's caller may see it: only the models in its key's scope (a 403 for another), and a 404
 * for a uid not running that names the others only to a caller that may list them.
 */
const modelsSeenBy = (models: ModelDirectory, listRunning: boolean, scope: ModelScope): ModelDirectory => ({
  get: <Ops extends OperationMap<Ops>>(uid: string) => {
    scope.require(uid)
    return models.get<Ops>(uid, {listRunning})
  },
  list: () => models.list().filter((model) => scope.has(model.uid)),
})

/** koa-body's own failures, reworded for the person who sent the request. */
function bodyError(error: unknown): ServiceError | undefined {
  if (error instanceof ServiceError) return undefined
  const candidate = error as {status?: number; type?: string; message?: string; name?: string; body?: unknown; limit?: number}
  if (candidate?.status === 413 || candidate?.type === 'entity.too.large')
    return new ServiceError(413, 'invalid_request', `the request body is larger than the ${formatBytes(candidate.limit ?? JSON_LIMIT)} limit.`)
  // The parser quotes the text around the mistake, which may be a password or a key: the mistake is located instead.
  if (candidate?.name === 'SyntaxError' || candidate?.type === 'entity.parse.failed' || /JSON/i.test(candidate?.message ?? '')) {
    const what = typeof candidate.body === 'string' ? describeJsonMistake(candidate.body) : 'it cannot be parsed'
    return new ServiceError(400, 'invalid_json', `the request body is not valid JSON: ${what}. Send a JSON object with Content-Type: application/json.`)
  }
  return undefined
}

/** The media types a JSON route reads: JSON itself and its `+json` kinds. */
const JSON_TYPES = ['application/json', '+json']

/**
 * A JSON route takes a body only of a JSON type, as FastAPI does since its CSRF fix: a web page can send any site
 * a body of `text/plain` or a form without asking the browser first, but not one of `application/json`. Routes
 * that also accept form encoding (the OAuth2 token request) take a form too; browser-guard.ts checks its Origin.
 */
const requireJsonBody =
  (acceptsForm: boolean): Koa.Middleware =>
  async (ctx, next) => {
    const accepted = acceptsForm ? [...JSON_TYPES, 'application/x-www-form-urlencoded'] : JSON_TYPES
    // `is` answers null for a request without a body, which any route may send.
    if (ctx.request.length !== 0 && ctx.is(accepted) === false) {
      const sent = ctx.get('content-type') ? `Content-Type ${JSON.stringify(ctx.get('content-type').slice(0, 100))}` : 'no Content-Type'
      throw new ServiceError(415, 'unsupported', `${ctx.method} ${ctx.path} takes a JSON body, and this one has ${sent}: send it with Content-Type: application/json${acceptsForm ? ' (or application/x-www-form-urlencoded)' : ''}.`)
    }

    await next()
  }

const bodyParsers = new Map<string, Promise<Koa.Middleware>>()

/**
 * koa-body (with zod, formidable, co-body and two copies of mime-db behind it) is loaded by the first request
 * that has a body rather than at start: an idle service never needs it, and it is about 10 MB of its memory.
 */
const parseBody =
  (acceptsForm: boolean, limit = JSON_LIMIT): Koa.Middleware =>
  async (ctx, next) => {
    const kind = `${acceptsForm} ${limit}`
    let parser = bodyParsers.get(kind)
    if (!parser) {
      // DELETE too: Ollama's /api/delete names its model in the body, where a route that declares a body reads it.
      parser = import('koa-body').then(({HttpMethodEnum, koaBody}) =>
        koaBody({
          encoding: 'utf-8',
          formLimit: limit,
          json: true,
          jsonLimit: limit,
          jsonStrict: false,
          jsonTypes: JSON_TYPES,
          multipart: false,
          parsedMethods: [HttpMethodEnum.POST, HttpMethodEnum.PUT, HttpMethodEnum.PATCH, HttpMethodEnum.DELETE],
          text: false,
          urlencoded: acceptsForm,
        }),
      )
      bodyParsers.set(kind, parser)
    }

    return (await parser)(ctx, next)
  }

/** Tells a route that a request arrived before its body is read; the handler's start (or a failure before it) says it is known. */
const announceArrival =
  (onArrival: () => () => void): Koa.Middleware =>
  async (ctx, next) => {
    const arrived = onArrival()
    ;(ctx.state as {arrived?: () => void}).arrived = arrived
    try {
      await next()
    } finally {
      arrived()
    }
  }

/** RFC 6750 §3: a 401 names the scheme, and says when the credential sent was the problem. */
const challenge = (error: ServiceErrorShape) => (['invalid_credentials', 'token_expired', 'token_revoked'].includes(error.code) ? 'Bearer error="invalid_token"' : 'Bearer')

/** What writing to a client that went away fails with. */
const CLIENT_GONE = new Set(['ECONNABORTED', 'ECONNRESET', 'EPIPE', 'ERR_STREAM_DESTROYED', 'ERR_STREAM_PREMATURE_CLOSE'])

export function createApp(options: AppOptions): Koa {
  const {access, clusterToken, log, models, routes, shutdown, uploadDir, version} = options
  const app = new Koa()
  const styleOf = (path: string): ErrorStyle => (path.startsWith(ANTHROPIC_PREFIX) ? 'anthropic' : path.startsWith(OLLAMA_PREFIX) ? 'ollama' : 'openai')
  const guards = access ? accessGuards(access) : undefined
  const scopeOf = (ctx: Koa.Context): ModelScope => guards?.modelScope(ctx) ?? EVERY_MODEL
  let events = options.events
  if (!events) logServiceEvents((events = new ServiceEvents(log)), log)
  // Koa reports a failure to write an answer here, and would print it to stderr with its stack. A client that went
  // away is no failure (the request's event says it did not complete); anything else goes to the service's log.
  app.on('error', (error: NodeJS.ErrnoException, ctx?: Koa.Context) => {
    if (error.code !== undefined && CLIENT_GONE.has(error.code)) return
    log.error(`${ctx ? `${ctx.method} ${ctx.path}: ` : ''}writing the answer failed: ${error.stack ?? error.message}`)
  })

  app.use(assignRequestIds())
  app.use(async (ctx, next) => {
    ctx.set(VERSION_HEADER, version)
    try {
      await next()
      if (ctx.body === undefined) {
        if (ctx.status === 404) throw new ServiceError(404, 'not_found', `there is no route ${ctx.method} ${ctx.path}; see /docs for the API.`)
        // The router answers these without a body, having set the Allow header that HTTP asks a 405 to carry.
        if (ctx.status === 405) throw new ServiceError(405, 'invalid_request', `this route does not accept that HTTP method; it takes ${ctx.response.get('Allow')}. See /docs.`)
        if (ctx.status === 501) throw new ServiceError(501, 'unsupported', 'that HTTP method is not supported.')
      }
    } catch (error) {
      const shaped = bodyError(error) ?? toServiceError(error)
      if (shaped.status >= 500) log.error(`${ctx.method} ${ctx.path}: ${(error as Error)?.stack ?? error}`)
      ctx.status = shaped.status
      if (shaped.status === 401) ctx.set('WWW-Authenticate', challenge(shaped))
      if (shaped.retryAfterSeconds !== undefined) ctx.set('Retry-After', String(shaped.retryAfterSeconds))
      ctx.body = errorBody((ctx.state as {errorStyle?: ErrorStyle}).errorStyle ?? styleOf(ctx.path), shaped)
    }
  })
  app.use(reportRequests(events))
  app.use(browserGuard(options.browsers ?? {allowedHosts: [], allowedOrigins: [], listenHost: 'localhost'}))

  app.use(async (ctx, next) => {
    if (shutdown?.aborted) {
      ctx.set('Connection', 'close')
      throw shutdown.reason
    }

    await next()
  })

  // The web interface's files are public (its pages call the API with the user's credentials), so they come before the guard.
  if (options.webUi) app.use(serveWebUi())
  if (guards) app.use(guards.unrouted)
  const router = new Router()
  const failUndeclared = options.failUndeclaredAnswers ?? failsUndeclaredAnswers()
  for (const {definition} of routes) {
    const acceptsForm = definition.acceptsForm === true
    const checkAnswer = answerCheck(definition, {fail: failUndeclared, log})
    const handle: Koa.Middleware = async (ctx) => {
      const controller = new AbortController()
      ctx.res.once('close', () => {
        if (!ctx.res.writableFinished) controller.abort()
      })
      if (definition.query) checkQuery(definition.query, ctx.query)
      const body = definition.body ? definition.body.parse(ctx.request.body ?? {}) : undefined
      const named = body as {model?: unknown; request_id?: unknown} | undefined
      if (options.namedRequests && typeof named?.request_id === 'string' && typeof named.model === 'string')
        ctx.res.once('close', options.namedRequests.enter(named.request_id, named.model, (reason) => controller.abort(reason)))
      const release = await holdModel(options.modelUse, definition, body, {headers: ctx.headers, mayStart: guards ? guards.allows(ctx, 'models:start') : true, signal: controller.signal})
      if (release && (controller.signal.aborted || ctx.res.writableFinished)) release()
      else if (release) ctx.res.once('close', release)
      const mayListModels = guards ? guards.allows(ctx, 'models:list') : true
      const scope = scopeOf(ctx)
      const request: RouteRequest = {
        authority: guards ? guards.authorityOf(ctx) : SERVICE_AUTHORITY,
        body,
        clientAddress: ctx.req.socket.remoteAddress ?? 'unknown',
        files: filesOf(ctx),
        headers: ctx.headers,
        log,
        mayListModels,
        mayRegisterModels: guards ? guards.allows(ctx, 'models:register') : true,
        modelScope: scope,
        models: observedModels(ctx, modelsSeenBy(models, mayListModels, scope)),
        params: (ctx as unknown as {params: Record<string, string>}).params ?? {},
        query: ctx.query,
        signal: controller.signal,
      }
      const handled = definition.handler(request)
      ;(ctx.state as {arrived?: () => void}).arrived?.()
      const result = await handled
      checkAnswer(result)
      if (result.kind === 'json') {
        ctx.status = result.status ?? 200
        for (const [name, value] of Object.entries(result.headers ?? {})) ctx.set(name, value)
        // Koa turns a null body into 204; Xinference clients expect 200 with a JSON `null`.
        if (result.body === null || result.body === undefined) {
          ctx.type = 'application/json'
          ctx.body = 'null'
        } else {
          ctx.body = result.body
        }

        return
      }

      if (result.kind === 'bytes') {
        ctx.status = 200
        ctx.set({'Cache-Control': 'no-cache', 'Content-Type': result.contentType, 'X-Accel-Buffering': 'no'})
        ctx.body = Readable.from(result.body, {objectMode: false})
        return
      }

      ctx.status = 200
      // No Connection header of our own: Node then announces its keep-alive timeout (Keep-Alive: timeout=65), without
      // which clients such as fetch close an idle connection after 4 s, and a burst of requests then reaches the
      // service out of order, those on new connections after those on kept ones (see docs/benchmarks.md).
      ctx.set({'Cache-Control': 'no-cache', 'Content-Type': 'text/event-stream; charset=utf-8', 'X-Accel-Buffering': 'no'})
      ctx.req.socket.setNoDelay(true)
      ctx.body = toServerSentEvents(result.events, {
        errorEvent: result.errorEvent ?? ((error) => errorEvent(errorStyle, error)),
        onError: (error) => error.status >= 500 && error.code !== 'shutting_down' && log.error(`${definition.method} ${definition.path} stream: ${error.message}`),
        terminator: result.terminator,
        until: shutdown,
      })
    }

    const method = definition.method.toLowerCase() as 'delete' | 'get' | 'post' | 'put'
    const guard = requiredPermission(definition) === CLUSTER && clusterToken ? clusterGuard(clusterToken) : guards?.route(definition)
    // The route's own error style, before its guard: Anthropic's routes outside /anthropic (POST /v1/messages) answer in theirs.
    const errorStyle = definition.errorStyle ?? styleOf(definition.path)
    const chain: Koa.Middleware[] = [
      async (ctx, next) => {
        ;(ctx.state as {errorStyle?: ErrorStyle}).errorStyle = errorStyle
        await next()
      },
      ...(guard ? [guard] : []),
      ...(definition.onArrival ? [announceArrival(definition.onArrival)] : []),
      ...(definition.multipart ? [parseMultipart(definition, uploadDir, (ctx, uid) => modelsSeenBy(models, guards ? guards.allows(ctx, 'models:list') : true, scopeOf(ctx)).get(uid))] : definition.body ? [requireJsonBody(acceptsForm), parseBody(acceptsForm, definition.maxJsonBytes)] : []),
      handle,
    ]
    router[method](definition.path, ...chain)
  }

  app.use(router.routes())
  app.use(router.allowedMethods())
  return app
}
