/**
 * The one error vocabulary of the toolkit. Every failure a person can act on is a ServiceError with an HTTP
 * status, a stable machine code and a message written for that person. The HTTP edge renders it as the
 * OpenAI error envelope (or Anthropic's), the CLI edge as one clear line.
 *
 * Errors cross process and plugin boundaries (model processes, user-installed plugins with their own copy of
 * this module), so nothing relies on `instanceof`: any object with a numeric `status` and a `message` is
 * treated as a ServiceError (see `toServiceError`).
 */

/** Every error code the toolkit and its plugins use (test/unit/error-codes.test.ts finds each one here). */
export const ERROR_CODES = [
  'invalid_request',
  // OpenAI's code for a prompt longer than the model's context, by which client libraries tell that refusal from others.
  'context_length_exceeded',
  'invalid_json',
  'unknown_parameter',
  'model_not_found',
  'registration_not_found',
  'not_found',
  'conflict',
  'unsupported',
  'model_not_ready',
  // A model the request launched on demand, still loading: try again after Retry-After.
  'model_loading',
  'model_crashed',
  'model_restarting',
  'launch_failed',
  'unauthorized',
  'invalid_credentials',
  'login_failed',
  'login_throttled',
  'token_expired',
  'token_revoked',
  'forbidden',
  'quota_exceeded',
  'auth_disabled',
  'invalid_auth_config',
  'request_aborted',
  'overloaded',
  'shutting_down',
  'version_mismatch',
  'connection_failed',
  'unexpected_response',
  'internal_error',
  'generation_failed',
  'worker_lost',
  'worker_unreachable',
  'worker_not_registered',
  'hub_error',
  'hub_not_found',
  'hub_gated',
  'hub_busy',
  'download_failed',
  'download_corrupt',
  'insufficient_storage',
  'hub_unreachable',
  // servicectl's own, for --json: a command line it cannot parse, a launch cancelled with Ctrl-C, a confirmation answered no.
  'invalid_arguments',
  'cancelled',
  'declined',
] as const

export type ErrorCode = (typeof ERROR_CODES)[number]

export interface ServiceErrorShape {
  status: number
  code: ErrorCode | string
  message: string
  /** The request field the error is about, as a path such as `messages[0].role`. */
  param?: string | null
}

export class ServiceError extends Error implements ServiceErrorShape {
  readonly status: number
  readonly code: string
  readonly param: string | null
  /** When the caller may try again; the HTTP edge sends it as `Retry-After`. */
  retryAfterSeconds?: number

  /** `code` is a string because errors come back from other processes and services; test/unit/error-codes checks ours. */
  constructor(status: number, code: ErrorCode | string, message: string, param?: string | null) {
    super(message)
    this.name = 'ServiceError'
    this.status = status
    this.code = code
    this.param = param ?? null
  }

  withRetryAfter(seconds: number): this {
    this.retryAfterSeconds = seconds
    return this
  }

  toJSON(): ServiceErrorShape {
    return {code: this.code, message: this.message, param: this.param, status: this.status}
  }
}

export const badRequest = (message: string, param?: string, code: ErrorCode = 'invalid_request') =>
  new ServiceError(400, code, message, param)
export const notFound = (message: string, code: ErrorCode = 'not_found', param?: string) =>
  new ServiceError(404, code, message, param)
export const conflict = (message: string, param?: string) => new ServiceError(409, 'conflict', message, param)
export const unavailable = (message: string, code: ErrorCode = 'model_not_ready') => new ServiceError(503, code, message)

/** The factory plugins receive (`KernelApi.errors`, `LoadContext.errors`), so they never shape errors by hand. */
export const errorFactory = {
  badRequest: (message: string, param?: string) => badRequest(message, param),
  create: (status: number, code: ErrorCode, message: string, param?: string) => new ServiceError(status, code, message, param),
  notFound: (message: string) => notFound(message),
}

export function isServiceErrorShape(value: unknown): value is ServiceErrorShape {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as ServiceErrorShape).status === 'number' &&
    typeof (value as ServiceErrorShape).message === 'string'
  )
}

/**
 * Koa's own errors (e.g. from koa-body) carry `status` and `expose`; an error that is not meant to be shown
 * (`expose: false`, or any status >= 500 that is not ours) becomes a generic internal error so that stack
 * details and secrets never reach a client.
 */
export function toServiceError(error: unknown): ServiceError {
  if (error instanceof ServiceError) return error
  // Work stopped because its request's client went away (the abort's reason, thrown as it is): not a fault of the service.
  if ((error as {name?: unknown} | null)?.name === 'AbortError') return new ServiceError(499, 'request_aborted', 'the request was stopped: its client went away.')
  if (isServiceErrorShape(error)) {
    const candidate = error as ServiceErrorShape & {expose?: boolean; type?: string}
    if (candidate.expose === false || (candidate.status >= 500 && typeof candidate.code !== 'string')) {
      return new ServiceError(500, 'internal_error', 'The service hit an internal error; see the service log for details.')
    }

    const code = typeof candidate.code === 'string' ? candidate.code : 'invalid_request'
    return new ServiceError(candidate.status, code, candidate.message, candidate.param)
  }

  return new ServiceError(500, 'internal_error', 'The service hit an internal error; see the service log for details.')
}

const OPENAI_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  409: 'invalid_request_error',
  413: 'invalid_request_error',
  422: 'invalid_request_error',
  429: 'rate_limit_error',
  499: 'request_aborted',
}

const ANTHROPIC_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  503: 'overloaded_error',
}

export function openAiErrorType(status: number): string {
  return OPENAI_TYPES[status] ?? (status >= 500 ? 'server_error' : 'invalid_request_error')
}

/** The OpenAI error envelope: `{error: {message, type, param, code}}`. */
export function toOpenAiErrorBody(error: ServiceErrorShape) {
  return {error: {code: error.code, message: error.message, param: error.param ?? null, type: openAiErrorType(error.status)}}
}

/**
 * An error answer of every route but Anthropic's: OpenAI's envelope, with the message also as `detail`, where
 * Xinference's clients read it (FastAPI's `{"detail": …}`). One body serves both without telling who asked, since
 * OpenAI's clients read only `error` and Xinference's only `detail`.
 */
export function toErrorAnswerBody(error: ServiceErrorShape) {
  return {detail: error.message, ...toOpenAiErrorBody(error)}
}

/** Anthropic's error envelope: `{type: 'error', error: {type, message}}`. */
export function toAnthropicErrorBody(error: ServiceErrorShape) {
  const type = ANTHROPIC_TYPES[error.status] ?? (error.status >= 500 ? 'api_error' : 'invalid_request_error')
  return {error: {message: error.message, type}, type: 'error'}
}

/**
 * The status an envelope's error `type` stands for, read back from the tables that wrote it: an error sent inside
 * a stream comes after the HTTP status (200), so its type is all that is left of its status. A type that several
 * statuses share (invalid_request_error) reads as the lowest of them, 400; server_error, api_error and a type
 * that is not known read as 500.
 */
export function statusOfErrorType(type: unknown): number {
  for (const table of [OPENAI_TYPES, ANTHROPIC_TYPES]) {
    // Integer keys enumerate in ascending order, so a shared type finds its lowest status first.
    const status = Object.keys(table).find((key) => table[Number(key)] === type)
    if (status !== undefined) return Number(status)
  }

  return 500
}
