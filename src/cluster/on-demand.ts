/**
 * Models on demand and idle unloading, as Ollama's keep_alive: a request naming a known model that is not running
 * (unloaded when idle, or not restored) launches it with its saved launch, when on-demand is on for it and the caller
 * may start models; concurrent requests share that one launch. A model with no request in flight is unloaded once
 * its keep-alive runs out (the last request's `keep_alive`, else its launch's, else SERVICE_KEEP_ALIVE: forever
 * unless set), and stays known so that the next request brings it back with the same uid. It lives in the
 * supervisor's process, so in a cluster each model has one such owner whatever worker runs it.
 */
import type {Logger, ModelUse, ModelUseRequest} from '../kernel/contracts.js'
import type {ModelStateChanged, ServiceEvents, UnloadReason} from '../kernel/observability.js'
import type {DesiredModel, DesiredModels} from './desired-models.js'
import type {Supervisor} from './supervisor.js'

import {ServiceError} from '../kernel/errors.js'
import {describeKeepAlive, keepAliveMs} from '../kernel/keep-alive.js'
import {SERVICE_AUTHORITY} from '../kernel/reach.js'

/** What a client told to come back later waits before it retries a model still loading. */
const RETRY_AFTER_SECONDS = 5
/** The longest timer Node keeps; a longer keep-alive is armed again when it fires. */
const LONGEST_TIMER_MS = 2 ** 31 - 1

export interface OnDemandOptions {
  supervisor: Pick<Supervisor, 'launch' | 'progress' | 'state' | 'terminate'>
  desired: Pick<DesiredModels, 'known'>
  events: ServiceEvents
  log: Logger
  /** Launch known models on demand unless their launch says otherwise (SERVICE_LOAD_ON_DEMAND). */
  loadOnDemand: boolean
  /** How long a request waits for an on-demand launch before a 503 (SERVICE_ON_DEMAND_WAIT). */
  waitMs: number
  /** The keep-alive of a model whose launch and requests name none (SERVICE_KEEP_ALIVE); Infinity is forever. */
  keepAliveMs: number
  now?: () => number
}

/** A model requests have used: how many hold it now, the last one's keep-alive, and the timer that unloads it. */
interface Residency {
  inFlight: number
  keepAliveMs?: number
  /** When the last request let go of it: the least recently used is evicted first. */
  idleSince?: number
  expiresAt?: number
  timer?: NodeJS.Timeout
}

export class OnDemand implements ModelUse {
  private readonly resident = new Map<string, Residency>()
  /** On-demand launches being placed, by uid: a second request waits for the first's rather than launching again. */
  private readonly starting = new Map<string, Promise<void>>()
  /** Unloads under way, by uid: a request arriving meanwhile waits, then launches the model again. */
  private readonly unloading = new Map<string, Promise<void>>()
  private readonly now: () => number

  constructor(private readonly options: OnDemandOptions) {
    this.now = options.now ?? Date.now
    options.events.on('model', (event) => this.stateChanged(event))
  }

  async acquire(uid: string, request: ModelUseRequest): Promise<() => void> {
    const unloading = this.unloading.get(uid)
    if (unloading) await unloading
    // Names never launched get no entry: a caller cannot grow this table by making names up.
    if (!this.options.supervisor.state(uid) && !this.options.desired.known(uid)) return () => {}
    const residency = this.residency(uid)
    residency.inFlight++
    clearTimeout(residency.timer)
    let released = false
    const release = () => {
      if (released) return
      released = true
      residency.inFlight--
      // As in Ollama, each request sets the keep-alive anew; one that names none goes back to the model's own.
      residency.keepAliveMs = request.keepAliveMs
      if (residency.inFlight === 0) this.idle(uid, residency)
    }
    try {
      await this.running(uid, request)
    } catch (error) {
      release()
      throw error
    }

    return release
  }

  /** When an idle model will be unloaded (for Ollama's /api/ps); undefined while in use or kept forever. */
  expiresAt(uid: string): number | undefined {
    return this.resident.get(uid)?.expiresAt
  }

  /** Whether a model could be evicted for room: one loaded, idle, and with a keep-alive (one kept forever was asked to stay). */
  evictable(): boolean {
    return this.idleModels().length > 0
  }

  /** Unloads the least recently used evictable model, for a launch whose memory does not fit; answers whether there was one. */
  async evict(forUid: string): Promise<boolean> {
    const [oldest] = this.idleModels()
    if (!oldest) return false
    this.options.log.info(`evicting ${oldest[0]}, idle, to make room for ${forUid}`)
    await this.unload(oldest[0], oldest[1], 'evicted')
    return true
  }

  private idleModels(): Array<[string, Residency]> {
    const idle = [...this.resident].filter(([uid, residency]) => residency.inFlight === 0 && residency.expiresAt !== undefined && this.options.supervisor.state(uid)?.status === 'ready')
    return idle.sort(([, a], [, b]) => (a.idleSince ?? 0) - (b.idleSince ?? 0))
  }

  /** Launches a known model that is not running, when on-demand is on for it and the caller may; then waits for it to be ready. */
  private async running(uid: string, request: ModelUseRequest): Promise<void> {
    const {supervisor} = this.options
    const state = supervisor.state(uid)
    if (state && state.status !== 'launching') return
    const known = this.options.desired.known(uid)
    // Otherwise the route answers as it always has: 404 for a model not running, 503 for one launching.
    if (!known || !this.onDemandFor(known) || (!state && !request.mayStart)) return
    if (!state) {
      let starting = this.starting.get(uid)
      if (!starting) this.starting.set(uid, (starting = this.start(known)))
      await starting
    }

    await this.untilReady(uid, request)
  }

  private onDemandFor(model: DesiredModel): boolean {
    return model.launch.on_demand ?? (this.options.loadOnDemand || model.unloaded !== undefined)
  }

  private async start(model: DesiredModel): Promise<void> {
    const uid = model.launch.model_uid
    this.options.log.info(`launching ${uid} on demand${model.unloaded ? ` (unloaded: ${model.unloaded.reason.replaceAll('_', ' ')})` : ''}`)
    try {
      // With the service's own authority, as a restored model: the launch was checked when it was first made.
      await this.options.supervisor.launch(model.launch, {authority: SERVICE_AUTHORITY, onDemand: true, waitReady: false})
    } catch (error) {
      // Someone launched the uid meanwhile: that launch is the one to wait for.
      if (!this.options.supervisor.state(uid)) throw error
    } finally {
      this.starting.delete(uid)
    }
  }

  private async untilReady(uid: string, request: ModelUseRequest): Promise<void> {
    const state = this.options.supervisor.state(uid)
    if (state?.status !== 'launching') return
    if (!request.wait || this.options.waitMs === 0) throw this.loading(uid)
    const gaveUp = AbortSignal.timeout(this.options.waitMs)
    const stop = AbortSignal.any([request.signal, gaveUp])
    let quit!: () => void
    const stopped = new Promise<never>((_, reject) => (quit = () => reject(gaveUp.aborted ? this.loading(uid) : request.signal.reason)))
    stop.addEventListener('abort', quit, {once: true})
    try {
      await Promise.race([state.launched, stopped])
    } finally {
      stop.removeEventListener('abort', quit)
    }
  }

  /** The 503 of a model still loading: where its launch is, and when to try again. */
  private loading(uid: string): ServiceError {
    const {progress, stage} = this.options.supervisor.progress(uid)
    return new ServiceError(
      503,
      'model_loading',
      `model ${uid} is loading on demand (${stage}, ${Math.round(progress * 100)}%); retry in ${RETRY_AFTER_SECONDS} s, or follow GET /v1/models/${uid}/progress.`,
      'model',
    ).withRetryAfter(RETRY_AFTER_SECONDS)
  }

  private residency(uid: string): Residency {
    let residency = this.resident.get(uid)
    if (!residency) this.resident.set(uid, (residency = {inFlight: 0}))
    return residency
  }

  /** Arms the unload of a model no request holds, after the last request's keep-alive, else its launch's, else the service's. */
  private idle(uid: string, residency: Residency): void {
    clearTimeout(residency.timer)
    Object.assign(residency, {expiresAt: undefined, idleSince: this.now()})
    if (!this.options.supervisor.state(uid)) {
      this.resident.delete(uid)
      return
    }

    const ms = this.keepAliveOf(uid, residency)
    if (ms === Number.POSITIVE_INFINITY) return
    residency.expiresAt = this.now() + ms
    this.arm(uid, residency, ms === 0 ? 'keep_alive_0' : 'idle')
  }

  private arm(uid: string, residency: Residency, reason: UnloadReason): void {
    const left = Math.max(0, residency.expiresAt! - this.now())
    residency.timer = setTimeout(() => (left > LONGEST_TIMER_MS ? this.arm(uid, residency, reason) : void this.unload(uid, residency, reason)), Math.min(left, LONGEST_TIMER_MS))
    residency.timer.unref()
  }

  private keepAliveOf(uid: string, residency: Residency): number {
    const launched = this.options.desired.known(uid)?.launch.keep_alive
    return residency.keepAliveMs ?? (launched === undefined || launched === null ? undefined : keepAliveMs(launched)) ?? this.options.keepAliveMs
  }

  private async unload(uid: string, residency: Residency, reason: UnloadReason): Promise<void> {
    const {log, supervisor} = this.options
    if (this.resident.get(uid) !== residency || residency.inFlight > 0 || supervisor.state(uid)?.status !== 'ready') return
    clearTimeout(residency.timer)
    if (reason !== 'evicted') log.info(`unloading ${uid}: ${reason === 'keep_alive_0' ? 'its last request asked for keep_alive 0' : `idle for ${describeKeepAlive(this.keepAliveOf(uid, residency))}`}`)
    const unloaded = supervisor
      .terminate(uid, undefined, reason)
      .catch((error) => log.warn(`could not unload ${uid}: ${(error as Error).message}`))
      .finally(() => this.unloading.delete(uid))
    this.unloading.set(uid, unloaded)
    await unloaded
  }

  private stateChanged({state, uid}: ModelStateChanged): void {
    const residency = this.resident.get(uid)
    if (state === 'ready') {
      const current = residency ?? this.residency(uid)
      if (current.inFlight === 0) this.idle(uid, current)
    } else if ((state === 'terminated' || state === 'error') && residency) {
      clearTimeout(residency.timer)
      Object.assign(residency, {expiresAt: undefined, keepAliveMs: undefined})
      if (residency.inFlight === 0) this.resident.delete(uid)
    }
  }
}
