/**
 * The service's one observability seam: the HTTP app reports every finished request and the supervisor every change
 * of a model's state, on one typed emitter that the log, the metrics and the events API subscribe to. Emitting
 * never waits on a subscriber, and a subscriber that throws is logged rather than failing the request.
 */
import {EventEmitter} from 'node:events'

import type {Logger} from './contracts.js'

/** A request the HTTP app has finished answering (or whose client went away). */
export interface RequestFinished {
  method: string
  /** The route's path as declared (`/v1/models/:model_uid`); `/ui` for the web interface's files, `unmatched` when no route took it. */
  route: string
  path: string
  status: number
  /** False when the client went away before the whole answer was sent. */
  completed: boolean
  streamed: boolean
  durationMs: number
  /** The request's id: the caller's `X-Request-Id` when it sent an acceptable one, else one made for it. */
  requestId?: string
  /** The model the request ran on, when it ran one. */
  modelUid?: string
  promptTokens?: number
  completionTokens?: number
  /** Milliseconds from the request's arrival to the model's first output (text or a tool call). */
  ttftMs?: number
  /** The name of the API key (or of the user's logins) that made it, with access control on; never the key itself. */
  apiKey?: string
}

export type ModelState = 'launching' | 'ready' | 'restarting' | 'error' | 'terminated'

export interface ModelStateChanged {
  uid: string
  modelName: string
  modelType: string
  state: ModelState
  /** Why it failed or ended, for `error` and for a `terminated` that nobody asked for (a cancelled launch). */
  reason?: string
  /** What a `launching` model is: engine, format, size, quantization, workers and parameters. */
  details?: Record<string, unknown>
  /** A `launching` model's launch request as the service received it, with the uid it got: what relaunches it. */
  launch?: Record<string, unknown>
  /** A `terminated` model the service unloaded itself (keep-alive.ts): it stays known, and a request launches it again. */
  unload?: UnloadReason
}

/** Why the service unloaded a model: idle past its keep-alive, `keep_alive` 0 on its last request, or room for another launch. */
export const UNLOAD_REASONS = ['idle', 'keep_alive_0', 'evicted'] as const
export type UnloadReason = (typeof UNLOAD_REASONS)[number]

/** A step of a launch as its worker reports it: bytes downloaded, weights being generated, or loading. */
export interface LaunchStepReported {
  uid: string
  stage: 'downloading' | 'generating' | 'installing' | 'loading'
  downloadedBytes?: number
  totalBytes?: number
}

/** A request has begun running on a model (its first operation there); its `request` event follows once it ends. */
export interface RequestStarted {
  method: string
  route: string
  modelUid: string
  requestId?: string
  /** As in RequestFinished. */
  apiKey?: string
}

/** A download of a model's weights from a hub has ended, complete or not. */
export interface DownloadFinished {
  hub: string
  modelName: string
  outcome: 'completed' | 'failed' | 'cancelled'
  /** The bytes fetched from the hub this time (not those a resumed download already had). */
  bytes: number
  durationMs: number
  reason?: string
}

interface ServiceEventMap {
  request: [RequestFinished]
  requestStarted: [RequestStarted]
  model: [ModelStateChanged]
  launchStep: [LaunchStepReported]
  download: [DownloadFinished]
}

export class ServiceEvents extends EventEmitter<ServiceEventMap> {
  constructor(private readonly log?: Logger) {
    super({captureRejections: false})
  }

  /** Emits to every subscriber; one that throws is logged and the others still hear it. */
  report<K extends keyof ServiceEventMap>(name: K, ...event: ServiceEventMap[K]): void {
    for (const listener of this.listeners(name) as Array<(...args: ServiceEventMap[K]) => void>) {
      try {
        listener(...event)
      } catch (error) {
        this.log?.error(`a ${name} event subscriber failed: ${(error as Error)?.stack ?? error}`)
      }
    }
  }
}

/** A cluster's liveness traffic, every few seconds per worker: its access lines are debug, so an idle cluster's log stays quiet. */
const PERIODIC_ROUTES = new Set(['/v1/cluster/workers/heartbeat', '/v1/worker/health'])

/**
 * One access line per request (info), with what it ran and how it went as fields; one line per model state change
 * (debug; the supervisor logs its own).
 */
export function logServiceEvents(events: ServiceEvents, log: Logger): void {
  events.on('request', (event) =>
    log[PERIODIC_ROUTES.has(event.route) ? 'debug' : 'info'](`${event.method} ${event.path}${event.completed ? '' : ' (client went away)'}`, {
      status: event.status,
      duration_ms: Number(event.durationMs.toFixed(1)),
      route: event.route,
      model: event.modelUid,
      prompt_tokens: event.promptTokens,
      completion_tokens: event.completionTokens,
      ttft_ms: event.ttftMs === undefined ? undefined : Number(event.ttftMs.toFixed(1)),
      request_id: event.requestId,
      // Only with access control on, so the lines of a service without it stay as they were.
      ...(event.apiKey === undefined ? {} : {api_key: event.apiKey}),
    }),
  )
  events.on('model', (event) => log.debug(`model ${event.uid} (${event.modelType} ${event.modelName}) is ${event.state}${event.reason ? `: ${event.reason}` : ''}`))
}
