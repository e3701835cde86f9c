/**
 * Reports every finished request on the service's events (see kernel/observability.ts). What only the route knows,
 * the model it ran and that model's token counts and first output, is observed on the model handles the route is
 * given: the events a model yields say it (`done` carries the counts, the first `text` or `tool_call` is the first
 * token), so no route has to report anything itself.
 */
import type Koa from 'koa'

import type {ModelDirectory, ModelHandle} from '../kernel/contracts.js'
import type {RequestFinished, ServiceEvents} from '../kernel/observability.js'
import type {OperationMap} from '../kernel/operations.js'

import {callerKeyName} from './access.js'
import {requestIdOf} from './request-id.js'
import {isWebUiPath, WEB_UI_PATH} from './web-ui.js'

interface Observation {
  started: number
  /** Reports that the request began running on a model. */
  startedOn(modelUid: string): void
  modelUid?: string
  promptTokens?: number
  completionTokens?: number
  ttftMs?: number
}

interface ObservedEvent {
  type?: unknown
  promptTokens?: unknown
  completionTokens?: unknown
}

const observationOf = (ctx: Koa.Context) => (ctx.state as {observation?: Observation}).observation

/**
 * The route a request took, as declared (`/v1/models/:model_uid`); the web interface's files as one, and every request
 * no route took as `unmatched`: labels made of callers' own paths would grow the metrics without bound (a scanner).
 */
export function routeOf(ctx: Koa.Context): string {
  const matched = (ctx as {_matchedRoute?: string})._matchedRoute
  if (matched) return matched
  return isWebUiPath(ctx.path) ? WEB_UI_PATH : 'unmatched'
}

/** nginx's status for a request whose client closed its connection before any answer (Koa's would read 404). */
const CLIENT_CLOSED_REQUEST = 499
const closedByClient = (ctx: Koa.Context) => !ctx.res.headersSent && !ctx.res.writableFinished

/** Middleware that reports the request once its response is closed, finished or not. */
export function reportRequests(events: ServiceEvents): Koa.Middleware {
  return async (ctx, next) => {
    const requestId = requestIdOf(ctx)
    const observation: Observation = {
      started: performance.now(),
      startedOn(modelUid) {
        const apiKey = callerKeyName(ctx)
        events.report('requestStarted', {method: ctx.method, modelUid, route: routeOf(ctx), ...(requestId ? {requestId} : {}), ...(apiKey ? {apiKey} : {})})
      },
    }
    ;(ctx.state as {observation?: Observation}).observation = observation
    ctx.res.once('close', () => {
      const apiKey = callerKeyName(ctx)
      const event: RequestFinished = {
        completed: ctx.res.writableFinished,
        durationMs: performance.now() - observation.started,
        method: ctx.method,
        path: ctx.path,
        route: routeOf(ctx),
        status: closedByClient(ctx) ? CLIENT_CLOSED_REQUEST : ctx.status,
        streamed: ctx.response.type === 'text/event-stream',
        ...(requestId ? {requestId} : {}),
        ...(observation.modelUid === undefined ? {} : {modelUid: observation.modelUid}),
        ...(observation.promptTokens === undefined ? {} : {promptTokens: observation.promptTokens}),
        ...(observation.completionTokens === undefined ? {} : {completionTokens: observation.completionTokens}),
        ...(observation.ttftMs === undefined ? {} : {ttftMs: observation.ttftMs}),
        ...(apiKey ? {apiKey} : {}),
      }
      events.report('request', event)
    })
    await next()
  }
}

const add = (total: number | undefined, value: unknown) => (typeof value === 'number' ? (total ?? 0) + value : total)

/** Passes a model's events through, noting its first output and its token counts (summed over a request's operations). */
async function* observed(events: AsyncIterable<unknown>, observation: Observation): AsyncGenerator<unknown> {
  for await (const event of events) {
    const {completionTokens, promptTokens, type} = (event ?? {}) as ObservedEvent
    if (observation.ttftMs === undefined && (type === 'text' || type === 'tool_call')) observation.ttftMs = performance.now() - observation.started
    if (type === 'done') {
      observation.promptTokens = add(observation.promptTokens, promptTokens)
      observation.completionTokens = add(observation.completionTokens, completionTokens)
    }

    yield event
  }
}

function observedHandle(handle: ModelHandle, observation: Observation): ModelHandle {
  return {
    abilities: handle.abilities,
    // Not spread: a handle makes its description only when asked for it.
    get description() {
      return handle.description
    },
    invoke(operation, payload, signal) {
      // The first model a request runs on is the one it reports, so that its start and its end name the same model.
      if (observation.modelUid === undefined) {
        observation.modelUid = handle.uid
        observation.startedOn(handle.uid)
      }
      return observed(handle.invoke(operation, payload, signal), observation)
    },
    modelName: handle.modelName,
    modelType: handle.modelType,
    uid: handle.uid,
  }
}

/** The models a route is given, observed for the request's event; the directory itself when nothing observes. */
export function observedModels(ctx: Koa.Context, models: ModelDirectory): ModelDirectory {
  const observation = observationOf(ctx)
  if (!observation) return models
  return {
    // Typed as the route asks, like the directory's own get.
    get: <Ops extends OperationMap<Ops>>(uid: string) => observedHandle(models.get(uid), observation) as unknown as ModelHandle<Ops>,
    list: () => models.list().map((handle) => observedHandle(handle, observation)),
  }
}
