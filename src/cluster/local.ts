/**
 * Local mode: supervisor, one worker and the HTTP API in one process, wired through the same interfaces
 * cluster mode puts on the network.
 */
import type {Config} from '@oclif/core'

import {join} from 'node:path'

import type {AuthConfig} from '../auth/config.js'
import type {RouteDefinition} from '../kernel/contracts.js'
import type {ServiceSettings} from '../kernel/settings.js'

import {AccessControl} from '../auth/access-control.js'
import {collectContributions} from '../kernel/hooks.js'
import {createKernelApi, Kernel} from '../kernel/kernel.js'
import {ModelRegistry} from '../kernel/registry.js'
import {homePaths} from '../kernel/settings.js'
import {createLogger} from '../lib/logger.js'
import {createApp} from '../server/app.js'
import {listen} from '../server/listen.js'
import {coreRoutes} from '../server/routes/core.js'
import {docsRoutes, openApiDocument} from '../server/routes/docs.js'
import {Supervisor} from './supervisor.js'
import {WeightStore} from './weights.js'
import {LocalWorker} from './worker.js'

export interface RunningService {
  url: string
  kernel: Kernel
  stop(): Promise<void>
}

/** `auth`: a checked access-control config turns access control on; without one every route is open. */
export async function startLocalService(config: Config, settings: ServiceSettings, {auth}: {auth?: AuthConfig} = {}): Promise<RunningService> {
  const paths = homePaths(settings.home)
  const log = createLogger({file: join(paths.logs, 'service-local.log'), level: settings.logLevel, name: 'local'})
  const version = config.version
  const api = createKernelApi(version, log)
  const {contributions, failures} = await collectContributions(config, api)
  const kernel = Kernel.fromContributions(api, contributions, failures)
  const registry = new ModelRegistry(kernel, paths.registrations, log)
  const loaded = await registry.load()
  log.info(`plugins: ${kernel.plugins.join(', ') || '(none)'}; engines: ${[...kernel.engines.values()].map((e) => e.definition.name).join(', ') || '(none)'}; ${loaded} custom registrations`)

  let supervisor: Supervisor | undefined
  const worker = new LocalWorker({
    env: {...(process.env as Record<string, string>), SERVICE_LOG_LEVEL: settings.logLevel},
    id: 'local',
    kernel,
    log,
    logDir: paths.logs,
    onCrash: (uid, error) => supervisor?.markCrashed(uid, error),
    weights: new WeightStore({cacheDir: paths.cache, log}),
  })
  const access = auth ? new AccessControl(auth, {now: Date.now}) : undefined
  log.info(access ? `access control on: ${access.summary}` : 'access control off: no credentials needed')
  supervisor = new Supervisor({defaultHub: settings.modelSource, kernel, log, registry, workers: [worker]})
  const routes = [
    ...coreRoutes({access, kernel, registry, supervisor, version}).map((definition) => ({definition, plugin: 'core'})),
    ...kernel.routes,
  ]
  let document: ReturnType<typeof openApiDocument> | undefined
  const all: Array<{definition: RouteDefinition; plugin: string}> = [...routes, ...docsRoutes(() => (document ??= openApiDocument(all, version))).map((definition) => ({definition, plugin: 'core'}))]
  const app = createApp({access, log, models: supervisor, routes: all, version})
  const listening = await listen(app, {host: settings.host, port: settings.port})
  log.info(`service ${version} listening on ${listening.url} (home ${settings.home})`)

  let stopping: Promise<void> | undefined
  return {
    kernel,
    stop: () =>
      (stopping ??= (async () => {
        log.info('shutting down: closing the API, then terminating models')
        await listening.close()
        await supervisor.dispose()
        await log.close()
      })()),
    url: listening.url,
  }
}
