/**
 * The supervisor's process: the model table, the HTTP API and, in local mode, one worker in the same
 * process; in cluster mode workers join over the network (worker-registry.ts) and are reached through the
 * same `WorkerApi`, so both modes run the same code.
 */
import type {Config} from '@oclif/core'

import {join} from 'node:path'

import type {AuthConfig} from '../auth/config.js'
import type {TlsIdentity} from '../kernel/certificates.js'
import type {RouteDefinition} from '../kernel/contracts.js'
import type {Kernel} from '../kernel/kernel.js'
import type {ServiceSettings} from '../kernel/settings.js'
import type {ClusterTiming} from '../protocol/membership.js'
import type {LaunchRequest} from '../protocol/launch.js'

import {AccessControl} from '../auth/access-control.js'
import {Revocations} from '../auth/revocations.js'
import {ServiceError} from '../kernel/errors.js'
import {loadKernel} from '../kernel/hooks.js'
import {logServiceEvents, ServiceEvents} from '../kernel/observability.js'
import {SERVICE_AUTHORITY} from '../kernel/reach.js'
import {ModelRegistry} from '../kernel/registry.js'
import {makeHomePrivate} from '../kernel/private-home.js'
import {homePaths} from '../kernel/settings.js'
import {lockHome} from '../util/home-lock.js'
import {createLogger} from '../util/logger.js'
import {createApp} from '../server/app.js'
import {listen} from '../server/listen.js'
import {NamedRequests} from '../server/named-requests.js'
import {autostartRoutes} from '../server/routes/autostart.js'
import {ollamaPullRoutes} from '../server/routes/ollama-pull.js'
import {clusterRoutes} from '../server/routes/cluster.js'
import {authRoutes} from '../server/routes/auth.js'
import {catalogueSearchRoutes} from '../server/routes/catalogue-search.js'
import {coreRoutes} from '../server/routes/core.js'
import {ollamaRoutes} from '../server/routes/ollama.js'
import {engineBuildRoutes} from '../server/routes/engine-build.js'
import {engineModelRoutes} from '../server/routes/engine-models.js'
import {eventRoutes} from '../server/routes/events.js'
import {openApiDocument} from '../server/openapi.js'
import {docsRoutes} from '../server/routes/docs.js'
import {metricsRoutes} from '../server/routes/metrics.js'
import {usageRoutes} from '../server/routes/usage.js'
import {accountUsage} from '../server/usage-accounting.js'
import {UsageLedger} from '../server/usage-ledger.js'
import {virtualEnvironmentRoutes} from '../server/routes/virtualenvs.js'
import {xinferenceRoutes} from '../server/routes/xinference.js'
import {ServiceMetrics} from '../server/metrics.js'
import {restoreClusterModels} from '../cluster/desired-cluster.js'
import {DesiredModels, restoreDesiredModels} from '../cluster/desired-models.js'
import {WeightsPull} from '../cluster/weights-pull.js'
import {discoverGpus} from '../cluster/devices.js'
import {LaunchHistory} from '../cluster/launch-history.js'
import {ModelEventLog} from '../cluster/model-events.js'
import {OnDemand} from '../cluster/on-demand.js'
import {restartPolicyFrom} from '../cluster/restart-policy.js'
import {Supervisor} from '../cluster/supervisor.js'
import {autoBuildSetting} from './engine-auto-build.js'
import {EngineAutoBuilder} from './engine-auto-builder.js'
import {stopOnce} from './stop-once.js'
import {PythonEnvironments} from '../python-env/environments.js'
import {PythonVersionProbe} from '../python-env/toolchain.js'
import {searchHuggingFace} from '../weights/hub-search.js'
import {WeightStore} from '../weights/store.js'
import {WorkerRegistry} from '../cluster/worker-registry.js'
import {WorkerUsage} from '../cluster/worker-usage.js'
import {LocalWorker, machineResources} from '../cluster/worker.js'

export interface RunningService {
  url: string
  kernel: Kernel
  /** Every finished request and model state change, for subscribers in the service's process (a worker has none). */
  events?: ServiceEvents
  /** Settles once the service has stopped, whoever stopped it (a signal, or `servicectl stop-cluster`). */
  stopped: Promise<void>
  stop(): Promise<void>
}

export interface ServiceOptions {
  /** A checked access-control config turns access control on; without one every route is open. */
  auth?: AuthConfig
  /** Cluster mode: no worker in this process; workers join over the network. */
  cluster?: {timing: ClusterTiming; clusterToken?: string}
  /** `--auto-build` / `--no-auto-build`, when given; else SERVICE_AUTO_BUILD decides. */
  autoBuild?: boolean
  /** Serve HTTPS with this certificate and key. */
  tls?: TlsIdentity
}

export async function startLocalService(config: Config, settings: ServiceSettings, {auth, autoBuild, cluster, tls}: ServiceOptions = {}): Promise<RunningService> {
  const name = cluster ? 'service-supervisor' : 'service-local'
  const homeWarnings = await makeHomePrivate(settings.home)
  const homeLock = await lockHome(settings.home, cluster ? ['supervisor'] : ['supervisor', 'worker'], {program: name})
  const paths = homePaths(settings.home)
  const log = createLogger({file: join(paths.logs, `${name}.log`), format: settings.logFormat, level: settings.logLevel, name: cluster ? 'supervisor' : 'local'})
  for (const warning of homeWarnings) log.warn(warning)
  const version = config.version
  const kernel = await loadKernel(config, log, {allowedImageHosts: settings.allowedImageHosts, allowedModelDirs: settings.allowedModelDirs, allowedPythonModules: settings.allowedPythonModules, cacheDir: paths.cache, home: settings.home})
  const reach = {allowedModelDirs: settings.allowedModelDirs, allowedPipSources: settings.allowedPipSources, allowedPythonModules: settings.allowedPythonModules}
  const registry = new ModelRegistry(kernel, paths.registrations, log, {...reach, maxRegistrationsPerUser: settings.maxRegistrationsPerUser})
  const loaded = await registry.load()
  log.info(`${loaded} custom registrations`)
  // Requests and model state changes, for the log now and for metrics and the events API to subscribe to.
  const events = new ServiceEvents(log)
  logServiceEvents(events, log)
  const modelEvents = new ModelEventLog(events)
  const launches = await LaunchHistory.open(events, {file: paths.launchHistory, log})
  // Recorded even when restoring is off, so that turning it back on finds the models as they last were.
  const desired = await DesiredModels.open(events, {file: paths.desiredModels, log})

  let supervisor: Supervisor | undefined
  // In a cluster the workers' resources, usage and downloads come from their heartbeats; here the local worker measures its own.
  const metrics = new ServiceMetrics({
    events,
    instances: () => supervisor?.instanceUsage() ?? [],
    refresh: async () => Promise.all(workers.map((worker) => worker.measure())).then(() => {}),
    workers: () => supervisor?.describeWorkers() ?? [],
  })
  const gpus = cluster ? [] : await discoverGpus(log)
  const python = new PythonVersionProbe(process.env.SERVICE_PYTHON || undefined)
  const workers = cluster
    ? []
    : [
        new LocalWorker({
          env: {...(process.env as Record<string, string>), SERVICE_LOG_FORMAT: settings.logFormat, SERVICE_LOG_LEVEL: settings.logLevel},
          id: 'local',
          kernel,
          log,
          engineCacheDir: paths.engineCache,
          logDir: paths.logs,
          onCrash: (uid, error) => supervisor?.markCrashed(uid, error),
          pythonEnvironments: PythonEnvironments.fromEnvironment(paths.virtualenv, process.env, log),
          resources: () => machineResources(gpus, python.current),
          resourcesSettled: () => python.settled(),
          usage: new WorkerUsage(events),
          version,
          weights: new WeightStore({allowedModelDirs: settings.allowedModelDirs, cacheDir: paths.cache, events, log, weightsGenerator: (format, recipe) => kernel.weightsGenerator(format, recipe)}),
        }),
      ]
  // The machine's models run here only in local mode, so only then is there an engine to build for it.
  const autoBuilds = cluster ? undefined : EngineAutoBuilder.forKernel(kernel, {log, logDir: paths.logs, setting: autoBuildSetting(autoBuild)})
  const access = auth
    ? new AccessControl(auth, {now: Date.now, revocations: await Revocations.open({file: paths.revokedTokens, lifetimeSeconds: auth.tokenExpireInMinutes * 60, log})})
    : undefined
  log.info(access ? `access control on: ${access.summary}` : 'access control off: no credentials needed')
  const usage = await UsageLedger.open({file: paths.usage, log})
  accountUsage(events, usage, access?.quotas)
  // Made after the supervisor, which it drives; a launch that does not fit asks it for room only once the service runs.
  const makeRoom = {evict: (uid: string): Promise<boolean> => onDemand.evict(uid), evictable: (): boolean => onDemand.evictable()}
  supervisor = new Supervisor({defaultHub: settings.modelSource, events, kernel, log, makeRoom, reach, registry, restart: restartPolicyFrom(process.env), workers})
  const {keepAliveMs, loadOnDemand, onDemandWaitSeconds} = settings
  const onDemand: OnDemand = new OnDemand({desired, events, keepAliveMs, loadOnDemand, log, supervisor, waitMs: onDemandWaitSeconds * 1000})
  const workerRegistry = cluster ? new WorkerRegistry({clusterToken: cluster.clusterToken, log, supervisor, timing: cluster.timing, version}) : undefined

  const shutdown = new AbortController()
  // The order matters: nothing new comes in, live streams end with an error event rather than a bare cut,
  // launches stop, the models' processes exit (each with a grace period, then killed), and only then the service.
  const {stop, stopped} = stopOnce(async () => {
    log.info('shutting down: refusing new requests, ending live streams, cancelling launches, then stopping models')
    workerRegistry?.stop()
    listening.stopAccepting()
    shutdown.abort(new ServiceError(503, 'shutting_down', `the ${cluster ? 'supervisor' : 'service'} is shutting down; this request was not completed.`))
    await supervisor.dispose()
    await autoBuilds?.dispose()
    await launches.close()
    await desired.flush()
    await usage.flush()
    await listening.close()
    metrics.dispose()
    await log.close()
    // Not left to proper-lockfile's exit hook: a child process's exit hook (execa's signal-exit) can unhook it.
    await homeLock.release()
  })

  const namedRequests = new NamedRequests()
  const routes = [
    ...engineModelRoutes({kernel, registry}).map((definition) => ({definition, plugin: 'core'})),
    ...catalogueSearchRoutes({kernel, registry, searchHub: (words, limit, signal) => searchHuggingFace(words, limit, {signal}), supervisor}).map((definition) => ({definition, plugin: 'core'})),
    // Before the core routes: /v1/engines/{engine}/build and /v1/models/instances would otherwise be taken for
    // /v1/engines/{model_type}/{model_name} and /v1/models/{model_uid}.
    ...engineBuildRoutes(autoBuilds).map((definition) => ({definition, plugin: 'core'})),
    ...xinferenceRoutes({namedRequests, supervisor}).map((definition) => ({definition, plugin: 'core'})),
    ...autostartRoutes({restored: desired, supervisor}).map((definition) => ({definition, plugin: 'core'})),
    ...coreRoutes({access, kernel, registry, supervisor, version}).map((definition) => ({definition, plugin: 'core'})),
    ...authRoutes(access).map((definition) => ({definition, plugin: 'core'})),
    ...clusterRoutes({cluster: workerRegistry && cluster ? {registry: workerRegistry, stop: () => void stop(), timing: cluster.timing} : undefined, supervisor, version}).map((definition) => ({definition, plugin: 'core'})),
    ...eventRoutes({events: (uid) => modelEvents.events(uid), history: (modelName) => launches.list(modelName)}).map((definition) => ({definition, plugin: 'core'})),
    ...metricsRoutes(metrics).map((definition) => ({definition, plugin: 'core'})),
    ...usageRoutes(usage).map((definition) => ({definition, plugin: 'core'})),
    ...virtualEnvironmentRoutes(supervisor).map((definition) => ({definition, plugin: 'core'})),
    ...ollamaRoutes({expiresAt: (uid) => onDemand.expiresAt(uid), version}).map((definition) => ({definition, plugin: 'core'})),
    ...ollamaPullRoutes({supervisor, weights: new WeightsPull({defaultHub: settings.modelSource, kernel, reach, registry}, workers)}).map((definition) => ({definition, plugin: 'core'})),
    ...kernel.routes,
  ]
  let document: ReturnType<typeof openApiDocument> | undefined
  const all: Array<{definition: RouteDefinition; plugin: string}> = [...routes, ...docsRoutes(() => (document ??= openApiDocument(all, version))).map((definition) => ({definition, plugin: 'core'}))]
  const browsers = {allowedHosts: settings.allowedHosts, allowedOrigins: settings.allowedOrigins, listenHost: settings.host}
  const app = createApp({access, browsers, clusterToken: cluster?.clusterToken, events, log, models: supervisor, modelUse: onDemand, namedRequests, routes: all, shutdown: shutdown.signal, uploadDir: paths.uploads, version, webUi: true})
  const listening = await listen(app, {host: settings.host, port: settings.port, tls})
  await homeLock.announce(listening.url)
  workerRegistry?.start()
  autoBuilds?.start()
  // In the background, once the service answers: a restored model is like any other launch, visible as it loads.
  // In a cluster, after the workers had the time to rejoin with the models they kept running (see desired-cluster.ts).
  // With the service's own authority: each was checked when it was first launched, and the allow-lists still apply.
  const relaunch = (request: LaunchRequest) => supervisor.launch(request, {authority: SERVICE_AUTHORITY, signal: shutdown.signal})
  if (!settings.restoreModels) log.info(`restoring models is off: ${desired.list().length} desired model(s) left as they are`)
  else if (cluster) {
    const models = {anyWorkerReady: () => supervisor.describeWorkers().some((worker) => worker.state === 'ready'), launch: relaunch, running: () => supervisor.list().map((model) => model.uid)}
    void restoreClusterModels(desired, models, {graceMs: cluster.timing.lostMs, log, signal: shutdown.signal})
  } else void restoreDesiredModels(desired, relaunch, {log, signal: shutdown.signal})
  log.info(`${cluster ? 'supervisor' : 'service'} ${version} listening on ${listening.url} (home ${settings.home})`)
  return {events, kernel, stop, stopped, url: listening.url}
}
