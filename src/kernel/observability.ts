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
  /** The route's path as declared (`/v1/models/:model_uid`), or the request's path when no route took it. */
  route: string
  path: string
  status: number
  /** False when the client went away before the whole answer was sent. */
  completed: boolean
  streamed: boolean
  durationMs: number
  /** The caller's `X-Request-Id`, when it sent one. */
  requestId?: string
  /** The model the request ran on, when it ran one. */
  modelUid?: string
  promptTokens?: number
  completionTokens?: number
  /** Milliseconds from the request's arrival to the model's first output (text or a tool call). */
  ttftMs?: number
}

export type ModelState = 'launching' | 'ready' | 'error' | 'terminated'

export interface ModelStateChanged {
  uid: string
  modelName: string
  modelType: string
  state: ModelState
  /** Why it failed or ended, for `error` and for a `terminated` that nobody asked for (a cancelled launch). */
  reason?: string
  /** What a `launching` model is: engine, format, size, quantization, workers and parameters. */
  details?: Record<string, unknown>
}

/** A step of a launch as its worker reports it: bytes downloaded, weights being generated, or loading. */
export interface LaunchStepReported {
  uid: string
  stage: 'downloading' | 'generating' | 'loading'
  downloadedBytes?: number
  totalBytes?: number
}

/** A request has begun running on a model (its first operation there); its `request` event follows once it ends. */
export interface RequestStarted {
  method: string
  route: string
  modelUid: string
  requestId?: string
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

const optional = (label: string, value: number | string | undefined) => (value === undefined ? '' : ` ${label}=${value}`)

/** One access line per request (debug) and one line per model state change (debug; the supervisor logs its own). */
export function logServiceEvents(events: ServiceEvents, log: Logger): void {
  events.on('request', (event) =>
    log.debug(
      `${event.method} ${event.path} ${event.status} ${event.durationMs.toFixed(1)}ms${event.completed ? '' : ' (client went away)'}` +
        optional('model', event.modelUid) +
        optional('prompt_tokens', event.promptTokens) +
        optional('completion_tokens', event.completionTokens) +
        optional('ttft_ms', event.ttftMs?.toFixed(1)) +
        optional('request_id', event.requestId),
    ),
  )
  events.on('model', (event) => log.debug(`model ${event.uid} (${event.modelType} ${event.modelName}) is ${event.state}${event.reason ? `: ${event.reason}` : ''}`))
}
