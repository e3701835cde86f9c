/**
 * Each model's events, as `GET /v1/models/{uid}/events` answers them: folded from the ServiceEvents seam (the
 * supervisor's state changes and launch steps) into a bounded ring per uid. A model's ring outlives it for a
 * while, so the history of a crashed or terminated model can still be read.
 */
import type {LaunchStepReported, ModelStateChanged, ServiceEvents} from '../kernel/observability.js'
import type {ModelEvent, ModelEventKind} from '../protocol/events.js'
import type {LaunchStep} from '../protocol/worker.js'
import type {InstanceRecord} from './model-table.js'

import {notFound} from '../kernel/errors.js'

/** Download milestones, in percent of the bytes: a launch reports at most these, plus its start. */
const MILESTONES = [25, 50, 75, 100]

export interface ModelEventLogOptions {
  /** Milliseconds since the epoch. */
  now?: () => number
  /** Events kept per model; the oldest go first. */
  perModel?: number
  /** How long a model's events are kept after it ended. */
  keptMs?: number
  /** Models whose events are kept; those that ended longest ago go first. */
  models?: number
}

interface ModelLog {
  events: ModelEvent[]
  /** Set when the model ended (terminated, crashed, failed): the log goes `keptMs` later. */
  endedAt?: number
  /** The state the supervisor last reported, which tells a crash from a failed launch. */
  state?: ModelStateChanged['state']
  /** The current launch's steps seen: the last download milestone reached, and whether it generated or loaded. */
  milestone: number
  generating: boolean
  installing: boolean
  loading: boolean
}

/** What a launch's `launching` event carries: the choices a reader needs to tell one launch from another. */
export function launchDetails(record: InstanceRecord): Record<string, unknown> {
  return {
    model_engine: record.engine,
    model_format: record.spec.model_format,
    model_size_in_billions: record.spec.model_size_in_billions,
    parameters: record.parameters,
    quantization: record.spec.quantization,
    replica: record.replica,
    workers: record.replicas.map((replica) => replica.worker.id),
  }
}

/** A worker's launch step as the seam reports it. */
export function stepReport(uid: string, step: LaunchStep): LaunchStepReported {
  return step.stage === 'downloading' ? {downloadedBytes: step.download.downloadedBytes, stage: 'downloading', totalBytes: step.download.totalBytes, uid} : {stage: step.stage, uid}
}

const STEP_MESSAGES = {generating: 'Generating random weights', installing: "Creating the engine's Python environment", loading: 'Loading the model'}

export class ModelEventLog {
  private readonly logs = new Map<string, ModelLog>()
  private readonly now: () => number
  private readonly perModel: number
  private readonly keptMs: number
  private readonly models: number

  constructor(events: ServiceEvents, options: ModelEventLogOptions = {}) {
    this.now = options.now ?? Date.now
    this.perModel = options.perModel ?? 100
    this.keptMs = options.keptMs ?? 60 * 60 * 1000
    this.models = options.models ?? 500
    events.on('model', (event) => this.stateChanged(event))
    events.on('launchStep', (step) => this.launchStep(step))
  }

  /** A model's events, oldest first; a 404 when it has none (never launched, or ended long ago). */
  events(uid: string): ModelEvent[] {
    this.prune()
    const log = this.logs.get(uid)
    if (!log) throw notFound(`model "${uid}" has no events: it was never launched here, or ended more than ${Math.round(this.keptMs / 60_000)} minutes ago.`, 'model_not_found', 'model_uid')
    return log.events.map((event) => ({...event, details: {...event.details}}))
  }

  private stateChanged({details, modelName, modelType, reason, state, uid, unload}: ModelStateChanged): void {
    const log = this.logs.get(uid)
    const previous = log?.state
    if (state === 'launching') {
      const fresh = this.start(uid)
      this.add(fresh, 'launch', 'INFO', `Launch model ${modelName} (${modelType})${details?.on_demand ? ' on demand' : ''}`, {model_name: modelName, model_type: modelType, ...details})
      fresh.state = state
      return
    }

    if (!log) return
    log.state = state
    if (state === 'ready') {
      // A model whose worker came back is ready again after its `crash`.
      log.endedAt = undefined
      this.add(log, 'ready', 'INFO', `Model ${uid} is ready`, {})
    }
    else if (state === 'restarting') {
      log.endedAt = undefined
      this.add(log, 'restart', 'WARNING', `Relaunching the model after: ${reason ?? 'no reason given'}`, {reason: reason ?? null, ...details})
    } else if (state === 'error') {
      const crashed = previous === 'ready'
      this.add(log, crashed ? 'crash' : 'launch_failed', 'ERROR', `${crashed ? 'Model crashed' : 'Launch failed'}: ${reason ?? 'no reason given'}`, {reason: reason ?? null})
      log.endedAt = this.now()
    } else if (unload) {
      this.add(log, 'unload', 'INFO', `Unloaded the model (${unload.replaceAll('_', ' ')}); a request launches it again`, {reason: unload})
      log.endedAt = this.now()
    } else {
      const cancelled = previous === 'launching'
      this.add(log, cancelled ? 'cancelled' : 'terminate', cancelled ? 'WARNING' : 'INFO', cancelled ? `Launch cancelled${reason ? `: ${reason}` : ''}` : 'Terminate model', reason ? {reason} : {})
      log.endedAt = this.now()
    }
  }

  private launchStep({downloadedBytes = 0, stage, totalBytes = 0, uid}: LaunchStepReported): void {
    const log = this.logs.get(uid)
    if (!log || log.state !== 'launching') return
    if (stage === 'downloading') {
      if (log.milestone < 0) {
        log.milestone = 0
        this.add(log, 'download', 'INFO', 'Download started', {downloaded_bytes: downloadedBytes, percent: 0, total_bytes: totalBytes})
      }

      const percent = totalBytes > 0 ? (100 * downloadedBytes) / totalBytes : 0
      const reached = MILESTONES.filter((milestone) => milestone > log.milestone && percent >= milestone).at(-1)
      if (reached === undefined) return
      log.milestone = reached
      this.add(log, 'download', 'INFO', `Downloaded ${reached}%`, {downloaded_bytes: downloadedBytes, percent: reached, total_bytes: totalBytes})
    } else if (!log[stage]) {
      log[stage] = true
      this.add(log, stage, 'INFO', STEP_MESSAGES[stage], {})
    }
  }

  /** A launch begins a new chapter of the uid's log (the earlier launches' events stay, up to the bound). */
  private start(uid: string): ModelLog {
    this.prune()
    const log = this.logs.get(uid) ?? {events: [], generating: false, installing: false, loading: false, milestone: -1}
    Object.assign(log, {endedAt: undefined, generating: false, installing: false, loading: false, milestone: -1})
    this.logs.delete(uid)
    this.logs.set(uid, log)
    return log
  }

  private add(log: ModelLog, kind: ModelEventKind, level: ModelEvent['event_type'], content: string, details: Record<string, unknown>): void {
    const timestamp = this.now()
    log.events.push({details, event_content: content, event_ts: Math.floor(timestamp / 1000), event_type: level, kind, timestamp})
    if (log.events.length > this.perModel) log.events.shift()
  }

  /** Forgets models that ended more than `keptMs` ago, and the oldest ended ones beyond the bound. */
  private prune(): void {
    const now = this.now()
    for (const [uid, log] of this.logs) if (log.endedAt !== undefined && now - log.endedAt > this.keptMs) this.logs.delete(uid)
    const ended = [...this.logs].filter(([, log]) => log.endedAt !== undefined).sort(([, a], [, b]) => a.endedAt! - b.endedAt!)
    for (const [uid] of ended.slice(0, Math.max(0, this.logs.size - this.models))) this.logs.delete(uid)
  }
}
