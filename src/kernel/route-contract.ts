/** What a route contributes (`Contribution.routes`) and what its handler is given: the part of the plugin contract the HTTP app reads. */
import type {Logger} from './contracts.js'
import type {ServiceError} from './errors.js'
import type {OperationMap, UntypedOperations} from './operations.js'
import type {Authority} from './reach.js'
import type {JsonSchema, Schema} from './schema.js'
import type {MultipartOptions, UploadedFiles} from './uploads.js'

/** A running model as route handlers see it; `Ops` are its model type's operations. */
export interface ModelHandle<Ops extends OperationMap<Ops> = UntypedOperations> {
  uid: string
  modelType: string
  modelName: string
  abilities: string[]
  description: Record<string, unknown>
  /** Runs one engine operation in the model's process; events stream back as they happen. */
  invoke<K extends keyof Ops & string>(operation: K, payload: Ops[K]['payload'], signal: AbortSignal): AsyncIterable<Ops[K]['event']>
}

/** How a lookup by uid answers a uid that is not running. */
export interface ModelLookup {
  /** Name the running models in the 404 (the default); false for a caller that may not list them. */
  listRunning?: boolean
}

export interface ModelDirectory {
  /**
   * The model with this uid, or a 404 ServiceError that lists the running models unless `lookup` says not to. A route
   * names the operations of the model type it serves as `Ops` and checks the model's abilities
   * (`KernelApi.requireAbility`) before invoking. The directory a route is given decides the listing by its caller.
   */
  get<Ops extends OperationMap<Ops> = UntypedOperations>(uid: string, lookup?: ModelLookup): ModelHandle<Ops>
  /** Every running model, by uid. */
  list(): ModelHandle[]
}

/** The models a caller may use, by uid. */
export interface ModelScope {
  has(uid: string): boolean
  /** Throws a 403 naming the model and the caller's scope unless it has the model. */
  require(uid: string): void
}

/** What a request that names a model asks of it beyond running (on-demand.ts): whether it may launch it, wait for it, and keep it loaded. */
export interface ModelUseRequest {
  /** The caller may start models (`models:start`, or anyone when access control is off): only then is a known model launched for it. */
  mayStart: boolean
  /** False when the client asked not to wait (`Prefer: respond-async`): a model that is loading answers 503 with Retry-After at once. */
  wait: boolean
  /** The request's `keep_alive` in milliseconds (Infinity: forever), when it sent one. */
  keepAliveMs?: number
  signal: AbortSignal
}

/** Keeps the models requests use loaded: launches a known one on demand, and unloads one idle past its keep-alive. */
export interface ModelUse {
  /** Holds the model for a request until the function answered is called (once its answer is over); launches it first when it may. */
  acquire(uid: string, request: ModelUseRequest): Promise<() => void>
}

export interface RouteRequest<Body = unknown> {
  body: Body
  params: Record<string, string>
  query: Record<string, string | string[] | undefined>
  headers: Record<string, string | string[] | undefined>
  /** The address the request came from (the connection's peer; a proxy in front of the service is that proxy). */
  clientAddress: string
  /** Aborted when the client goes away. */
  signal: AbortSignal
  /** The uploaded files of a route that declares `multipart`, by field; empty for any other. */
  files: UploadedFiles
  models: ModelDirectory
  /**
   * Whether the caller may list the running models (`models:list`, or anyone when access control is off). `models` already
   * heeds it; a route that looks a uid up otherwise passes it on as `ModelLookup.listRunning`, so that its 404 names them only then.
   */
  mayListModels: boolean
  /** The models the caller's key may use (its scope in the access-control config); `models` already heeds it. Every model without access control. */
  modelScope: ModelScope
  /** Whether the caller may register models (`models:register`, or anyone when access control is off): a hub model's first launch registers it. */
  mayRegisterModels: boolean
  /** Who calls, as far as what they may make the service run or read (reach.ts): every caller is admin when access control is off. */
  authority: Authority
  log: Logger
}

export type RouteResult =
  | {kind: 'json'; status?: number; body: unknown; headers?: Record<string, string>}
  /**
   * Server-sent events: each item becomes one `data:` line, or a named event when it is `{event, data}`;
   * `terminator` (e.g. `[DONE]`) is sent last.
   */
  | {kind: 'sse'; events: AsyncIterable<unknown>; terminator?: string; errorEvent?: (error: ServiceError) => unknown}
  /**
   * Bytes sent as they are made (synthesized speech): the client gets each chunk at once, and the iterator is
   * returned when the client goes away.
   */
  | {kind: 'bytes'; contentType: string; body: AsyncIterable<Uint8Array>}

/** The error body a route's clients read: OpenAI's envelope, Anthropic's, or Ollama's `{"error": "…"}`. */
export type ErrorStyle = 'openai' | 'anthropic' | 'ollama'

export interface QueryParameter {
  description: string
  /** Of the value as text would be parsed: `{type: 'boolean'}` for `?detailed=true`. */
  schema: JsonSchema
  required?: boolean
}

/**
 * A request of a route that succeeds on a service running the catalogue's tiny-random models: what /docs "Try it out"
 * fills in and sends. `body` is the JSON body (a multipart route's text fields; its files are the caller's to pick).
 */
export interface RouteExample {
  body?: unknown
  params?: Record<string, string>
  query?: Record<string, boolean | number | string>
}

export interface RouteDefinition<Body = unknown> {
  method: 'DELETE' | 'GET' | 'POST' | 'PUT'
  /** Koa-router path, e.g. `/v1/chat/completions`. */
  path: string
  summary: string
  tag?: string
  body?: Schema<Body>
  /** JSON Schema of the success response, for /openapi.json: of its JSON body, or of its text when it `produces` another type. */
  response?: JsonSchema
  /**
   * The media type of a success response that is not JSON (`text/plain` for /metrics, `text/html` for /docs), or the
   * types it may be (a route answering files, or JSON or text as the request asks, `application/json` among them).
   */
  produces?: string | string[]
  /** JSON Schema of each server-sent event's data, for a route that streams (`text/event-stream`) when its request asks to. */
  events?: JsonSchema
  /** Required of a route that takes a body or parameters: without it, swagger-ui makes up a request from the schema that fails. */
  example?: RouteExample
  /** The query parameters it reads, by name, for /openapi.json and the clients made from it. */
  query?: Record<string, QueryParameter>
  /**
   * The permission a caller needs when access control is on: `models:list`, `models:read` (inference),
   * `models:register`, `models:unregister`, `models:start`, `models:stop`, `metrics:read` or `admin`; `public` for routes anyone
   * may call. A route that declares none (or an unknown one) is admin-only.
   */
  permission?: string
  /** Also accept the body form-encoded (`application/x-www-form-urlencoded`), as OAuth2's token request is sent. */
  acceptsForm?: boolean
  /** The largest JSON body taken, in bytes; 16 MiB unless given (a route relaying uploads between services needs more). */
  maxJsonBytes?: number
  /**
   * Take the body as `multipart/form-data` instead of JSON, for uploads: its text fields go through `body`, its
   * files arrive in `request.files`, and are removed once the response is over.
   */
  multipart?: MultipartOptions
  errorStyle?: ErrorStyle
  /**
   * Told as a request arrives, before its body is read; the function it answers is called once the handler
   * has been called (or the request failed before it). The launch route uses it so that a terminate sent
   * together with a launch waits for the launch's uid instead of answering 404.
   */
  onArrival?(): () => void
  handler(request: RouteRequest<Body>): Promise<RouteResult>
}
