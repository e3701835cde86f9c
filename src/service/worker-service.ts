/**
 * The worker's process (`service-worker`): model instances in child processes, served to the supervisor by
 * the worker's own HTTP server, and a link that registers with the supervisor and sends heartbeats.
 */
import type {Config} from '@oclif/core'

import {join} from 'node:path'

import type {TlsIdentity} from '../kernel/certificates.js'
import type {ServiceSettings} from '../kernel/settings.js'
import type {RunningService} from './local.js'

import {ServiceError} from '../kernel/errors.js'
import {loadKernel} from '../kernel/hooks.js'
import {ServiceEvents} from '../kernel/observability.js'
import {CLUSTER} from '../kernel/permissions.js'
import {makeHomePrivate} from '../kernel/private-home.js'
import {homePaths} from '../kernel/settings.js'
import {lockHome} from '../util/home-lock.js'
import {createLogger} from '../util/logger.js'
import {createApp} from '../server/app.js'
import {listen} from '../server/listen.js'
import {engineBuildRoutes} from '../server/routes/engine-build.js'
import {discoverGpus} from '../cluster/devices.js'
import {autoBuildSetting} from './engine-auto-build.js'
import {EngineAutoBuilder} from './engine-auto-builder.js'
import {stopOnce} from './stop-once.js'
import {PythonEnvironments} from '../python-env/environments.js'
import {pythonVersion} from '../python-env/toolchain.js'
import {WeightStore} from '../weights/store.js'
import {SupervisorLink} from '../cluster/worker-link.js'
import {workerRoutes} from './worker-routes.js'
import {WorkerUsage} from '../cluster/worker-usage.js'
import {LocalWorker, machineResources} from '../cluster/worker.js'

export interface WorkerServiceOptions {
  /** The supervisor's endpoint, e.g. http://10.0.0.1:9997. */
  endpoint: string
  clusterToken?: string
  /** `--auto-build` / `--no-auto-build`, when given; else SERVICE_AUTO_BUILD decides. */
  autoBuild?: boolean
  /** Serve HTTPS with this certificate and key. */
  tls?: TlsIdentity
}

export async function startWorkerService(config: Config, settings: ServiceSettings, {autoBuild, clusterToken, endpoint, tls}: WorkerServiceOptions): Promise<RunningService> {
  // The address is what the supervisor will call: "all interfaces" names no machine it could reach.
  if (settings.host === '0.0.0.0' || settings.host === '::')
    throw new ServiceError(400, 'invalid_request', `-H ${settings.host} listens everywhere but is no address the supervisor can call; give this machine's address as the supervisor reaches it.`)
  const homeWarnings = await makeHomePrivate(settings.home)
  const homeLock = await lockHome(settings.home, ['worker'], {program: 'service-worker'})
  const paths = homePaths(settings.home)
  const log = createLogger({file: join(paths.logs, 'service-worker.log'), format: settings.logFormat, level: settings.logLevel, name: 'worker'})
  for (const warning of homeWarnings) log.warn(warning)
  const version = config.version
  const kernel = await loadKernel(config, log, {allowedImageHosts: settings.allowedImageHosts, allowedModelDirs: settings.allowedModelDirs, allowedPythonModules: settings.allowedPythonModules, cacheDir: paths.cache, home: settings.home})
  const autoBuilds = EngineAutoBuilder.forKernel(kernel, {log, logDir: paths.logs, setting: autoBuildSetting(autoBuild)})

  const shutdown = new AbortController()
  // As the supervisor's: nothing new comes in, live streams end with an error event, launches stop, the models'
  // processes exit (each with a grace period, then killed), and only then the worker.
  const {stop, stopped} = stopOnce(async () => {
    log.info('shutting down: refusing new requests, ending live streams, cancelling launches, then stopping models')
    link.stop()
    listening.stopAccepting()
    shutdown.abort(new ServiceError(503, 'shutting_down', `worker ${listening.url} is shutting down; this request was not completed.`))
    await worker.dispose()
    await autoBuilds.dispose()
    await listening.close()
    await log.close()
    // As service-local's: released here, not left to the exit hook.
    await homeLock.release()
  })

  const noModels = {
    get(): never {
      throw new ServiceError(404, 'not_found', 'a worker serves no model routes; call the supervisor.')
    },
    list: () => [],
  }
  const routes = [...workerRoutes({onShutdown: () => void stop(), version, worker: () => worker}), ...engineBuildRoutes(autoBuilds, CLUSTER)].map((definition) => ({
    definition,
    plugin: 'core',
  }))
  const browsers = {allowedHosts: settings.allowedHosts, allowedOrigins: settings.allowedOrigins, listenHost: settings.host}
  const app = createApp({browsers, clusterToken, log, models: noModels, routes, shutdown: shutdown.signal, uploadDir: paths.uploads, version})
  const listening = await listen(app, {host: settings.host, port: settings.port, tls})
  await homeLock.announce(listening.url)
  const gpus = await discoverGpus(log)
  const python = await pythonVersion(process.env.SERVICE_PYTHON || undefined)
  // The worker's downloads, which its heartbeats carry to the supervisor's metrics.
  const downloads = new ServiceEvents(log)
  const worker = new LocalWorker({
    env: {...(process.env as Record<string, string>), SERVICE_LOG_FORMAT: settings.logFormat, SERVICE_LOG_LEVEL: settings.logLevel},
    id: listening.url.replace(/^https?:\/\//, ''),
    kernel,
    log,
    engineCacheDir: paths.engineCache,
    logDir: paths.logs,
    pythonEnvironments: PythonEnvironments.fromEnvironment(paths.virtualenv, process.env, log),
    resources: () => machineResources(gpus, python),
    usage: new WorkerUsage(downloads),
    version,
    weights: new WeightStore({allowedModelDirs: settings.allowedModelDirs, cacheDir: paths.cache, events: downloads, log, weightsGenerator: (format, recipe) => kernel.weightsGenerator(format, recipe)}),
  })
  const link = new SupervisorLink({address: listening.url, clusterToken, endpoint: endpoint.replace(/\/+$/, ''), log, version, worker})
  try {
    await link.join()
  } catch (error) {
    await listening.close()
    await worker.dispose()
    await log.close()
    await homeLock.release()
    throw error
  }

  autoBuilds.start()
  log.info(`worker ${version} listening on ${listening.url}, joined ${endpoint} (home ${settings.home})`)
  return {kernel, stop, stopped, url: listening.url}
}
