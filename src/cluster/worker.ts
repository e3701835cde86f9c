/**
 * A worker hosts model instances, each in its own child process. The supervisor talks to workers only
 * through `WorkerApi`; in local mode the worker lives in the same process, and cluster mode puts the same
 * interface on the network.
 */
import {join} from 'node:path'

import type {EngineDefinition, LoadedModelInfo, LoadRequest, Logger} from '../kernel/contracts.js'
import type {Kernel} from '../kernel/kernel.js'

import {badRequest, conflict, notFound, ServiceError} from '../kernel/errors.js'
import {InstanceProcess, type InstanceState, type SpawnInstance, spawnInstanceProcess} from './instance-process.js'

export interface InstanceLaunch {
  engine: string
  load: Omit<LoadRequest, 'modelPath'>
}

export interface InstanceSummary {
  uid: string
  state: InstanceState
  pid?: number
  info: LoadedModelInfo
  error?: string
}

export interface WorkerApi {
  readonly id: string
  launch(launch: InstanceLaunch, signal?: AbortSignal): Promise<InstanceSummary>
  terminate(uid: string): Promise<void>
  invoke(uid: string, operation: string, payload: unknown, signal: AbortSignal): AsyncIterable<unknown>
  instances(): InstanceSummary[]
  dispose(): Promise<void>
}

/** Finds (and, with the model hub, fetches) the weights of a spec on this worker. */
export type ResolveWeights = (request: Omit<LoadRequest, 'modelPath'>, signal?: AbortSignal) => Promise<string>

export interface LocalWorkerOptions {
  id: string
  kernel: Kernel
  logDir: string
  log: Logger
  resolveWeights: ResolveWeights
  spawn?: SpawnInstance
  /** Told when an instance's process dies on its own, so the supervisor can show it on the model. */
  onCrash?: (uid: string, error: ServiceError) => void
  env?: Record<string, string>
}

export class LocalWorker implements WorkerApi {
  readonly id: string
  private readonly running = new Map<string, InstanceProcess>()

  constructor(private readonly options: LocalWorkerOptions) {
    this.id = options.id
  }

  async launch({engine: engineName, load}: InstanceLaunch, signal?: AbortSignal): Promise<InstanceSummary> {
    const {kernel, log} = this.options
    const engine = kernel.engine(engineName)?.definition
    if (!engine) throw badRequest(`engine "${engineName}" is not installed on worker ${this.id}.`, 'model_engine')
    if (this.running.has(load.modelUid)) throw conflict(`model uid "${load.modelUid}" is already running on worker ${this.id}.`, 'model_uid')
    await this.checkAvailable(engine)
    const modelPath = await this.options.resolveWeights(load, signal)
    const instance = new InstanceProcess(
      load.modelUid,
      this.options.spawn ?? spawnInstanceProcess,
      {env: this.options.env, logFile: join(this.options.logDir, 'models', `${load.modelUid}.log`)},
      (error) => {
        log.error(`model ${load.modelUid}: ${error.message}`)
        this.options.onCrash?.(load.modelUid, error)
      },
    )
    this.running.set(load.modelUid, instance)
    try {
      await instance.load(engine.hostModule, {...load, modelPath}, signal)
    } catch (error) {
      this.running.delete(load.modelUid)
      await instance.dispose(1000)
      throw error
    }

    log.info(`model ${load.modelUid} is ready (engine ${engine.name}, pid ${instance.pid})`)
    return this.summary(instance)
  }

  async terminate(uid: string): Promise<void> {
    const instance = this.running.get(uid)
    if (!instance) throw notFound(`model ${uid} is not running on worker ${this.id}.`, 'model_not_found')
    this.running.delete(uid)
    await instance.dispose()
    this.options.log.info(`model ${uid} terminated`)
  }

  invoke(uid: string, operation: string, payload: unknown, signal: AbortSignal): AsyncIterable<unknown> {
    const instance = this.running.get(uid)
    if (!instance) throw notFound(`model ${uid} is not running on worker ${this.id}.`, 'model_not_found')
    return instance.invoke(operation, payload, signal)
  }

  instances(): InstanceSummary[] {
    return [...this.running.values()].map((instance) => this.summary(instance))
  }

  async dispose(): Promise<void> {
    const all = [...this.running.values()]
    this.running.clear()
    await Promise.all(all.map((instance) => instance.dispose()))
  }

  private summary(instance: InstanceProcess): InstanceSummary {
    return {error: instance.failure?.message, info: instance.info, pid: instance.pid, state: instance.state, uid: instance.uid}
  }

  private async checkAvailable(engine: EngineDefinition) {
    const availability = (await engine.availability?.()) ?? true
    if (availability !== true)
      throw new ServiceError(400, 'unsupported', `engine ${engine.name} cannot run on worker ${this.id}: ${availability}`, 'model_engine')
  }
}
