/**
 * The worker's own HTTP server: `WorkerApi` on the network, called by the supervisor's `RemoteWorker`.
 * Every route is `permission: 'cluster'`: with a cluster token set, nothing here answers without it.
 * Streams are server-sent events of frames (`{event}`, `{progress}`, `{summary}`, `{error}`); a supervisor
 * that closes the connection aborts the work (the launch, or the model's generation).
 */
import type {RouteDefinition} from '../kernel/contracts.js'
import type {LocalWorker} from '../cluster/worker.js'
import type {InstanceLaunch, LaunchStep, WorkerFrame} from '../protocol/worker.js'

import {badRequest} from '../kernel/errors.js'
import {CLUSTER} from '../kernel/permissions.js'
import {instanceInvokeSchema, instanceLaunchSchema} from '../protocol/worker.js'

const json = (body: unknown) => ({body, kind: 'json' as const})
/** Each frame of a worker's stream, for /openapi.json: one of a launch's steps, its summary, an engine event or an error. */
const FRAME = {description: 'One of `{progress}` (a launch step), `{summary}` (the instance launched), `{event}` (an engine event) or `{error}`.', type: 'object'}
const frames = (events: AsyncIterable<WorkerFrame>) => ({errorEvent: (error: {toJSON(): unknown}) => ({error: error.toJSON()}), events, kind: 'sse' as const})


/** A launch as a stream: each step as it happens, then the instance's summary. */
async function* launchFrames(worker: LocalWorker, launch: InstanceLaunch, signal: AbortSignal): AsyncGenerator<WorkerFrame> {
  const steps: LaunchStep[] = []
  let wake: (() => void) | undefined
  let outcome: {summary: Awaited<ReturnType<LocalWorker['launch']>>} | {error: unknown} | undefined
  void worker
    .launch(launch, {onProgress: (step) => (steps.push(step), wake?.()), signal})
    .then(
      (summary) => (outcome = {summary}),
      (error) => (outcome = {error}),
    )
    .finally(() => wake?.())
  while (true) {
    while (steps.length > 0) yield {progress: steps.shift()!}
    if (outcome) break
    await new Promise<void>((resolve) => (wake = resolve))
  }

  if ('error' in outcome) throw outcome.error
  yield {summary: outcome.summary}
}

/** `worker` is a getter: the worker's id is its address, known only once the server listens. */
export function workerRoutes({onShutdown, version, worker}: {worker: () => LocalWorker; version: string; onShutdown: () => void}): RouteDefinition[] {
  const routes: Array<RouteDefinition<any>> = [
    {
      async handler() {
        return json({id: worker().id, version})
      },
      method: 'GET',
      path: '/v1/worker/health',
      permission: CLUSTER,
      summary: 'The worker answers: how the supervisor checks it can reach it',
      tag: 'worker',
    },
    {
      async handler() {
        return json({list: await worker().virtualEnvironments()})
      },
      method: 'GET',
      path: '/v1/worker/virtualenvs',
      permission: CLUSTER,
      summary: "This worker's Python environments",
      tag: 'worker',
    },
    {
      async handler({params}) {
        return json({path: await worker().removeVirtualEnvironment(params.name)})
      },
      method: 'DELETE',
      path: '/v1/worker/virtualenvs/:name',
      permission: CLUSTER,
      summary: 'Delete a Python environment from this worker',
      tag: 'worker',
    },
    {
      body: instanceLaunchSchema,
      events: FRAME,
      async handler({body, signal}) {
        return frames(launchFrames(worker(), body as InstanceLaunch, signal))
      },
      method: 'POST',
      path: '/v1/worker/instances',
      permission: CLUSTER,
      summary: 'Launch an instance; streams its progress, then its summary. Closing the connection cancels it',
      tag: 'worker',
    },
    {
      async handler() {
        return json({list: worker().instances()})
      },
      method: 'GET',
      path: '/v1/worker/instances',
      permission: CLUSTER,
      summary: 'Instances running here, each with the launch it came from',
      tag: 'worker',
    },
    {
      async handler({params}) {
        await worker().terminate(params.uid)
        return json(null)
      },
      method: 'DELETE',
      path: '/v1/worker/instances/:uid',
      permission: CLUSTER,
      summary: 'Terminate an instance',
      tag: 'worker',
    },
    {
      body: instanceInvokeSchema,
      events: FRAME,
      async handler({body, params, signal}) {
        const events = worker().invoke(params.uid, body.operation, body.payload, signal)
        return frames(
          (async function* () {
            for await (const event of events) yield {event}
          })(),
        )
      },
      // What a route hands a model whole: up to 25 minutes of decoded audio, or a 50 MiB picture and its mask, in base64.
      maxJsonBytes: 256 * 1024 * 1024,
      method: 'POST',
      path: '/v1/worker/instances/:uid/invoke',
      permission: CLUSTER,
      summary: "One engine operation on an instance; streams the engine's events. Closing the connection aborts it",
      tag: 'worker',
    },
    {
      async handler() {
        return json({list: await worker().cachedModels()})
      },
      method: 'GET',
      path: '/v1/worker/cache',
      permission: CLUSTER,
      summary: "Model versions in this worker's cache",
      tag: 'worker',
    },
    {
      async handler({query}) {
        const version = query.model_version
        if (typeof version !== 'string' || !version) throw badRequest('query parameter `model_version` is required.', 'model_version')
        return json({paths: await worker().removeCachedModel(version)})
      },
      method: 'DELETE',
      path: '/v1/worker/cache',
      permission: CLUSTER,
      summary: "Delete a model version from this worker's cache",
      tag: 'worker',
    },
    {
      body: instanceLaunchSchema,
      async handler({body, signal}) {
        return json(await worker().estimateMemory(body as InstanceLaunch, signal))
      },
      method: 'POST',
      path: '/v1/worker/memory',
      permission: CLUSTER,
      summary: 'Memory a launch would need here',
      tag: 'worker',
    },
    {
      async handler() {
        // Answer first: the supervisor waits for this reply, then the worker ends its models and exits.
        setImmediate(onShutdown)
        return json(null)
      },
      method: 'POST',
      path: '/v1/worker/shutdown',
      permission: CLUSTER,
      summary: 'End every model here and exit (servicectl stop-cluster)',
      tag: 'worker',
    },
  ]
  return routes
}
