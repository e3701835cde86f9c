/**
 * The launch history Xinference keeps (`GET /v1/launch_history`): every launch with its engine, parameters,
 * start, end and outcome, folded from the ServiceEvents seam and kept in one JSON file under SERVICE_HOME, so it
 * survives a restart. The file is rewritten whole (write-file-atomic: a crash leaves the old file or the new,
 * never half of one) and holds the newest `limit` launches.
 */
import {mkdir, readFile} from 'node:fs/promises'
import {dirname} from 'node:path'
import writeFileAtomic from 'write-file-atomic'

import type {Logger} from '../kernel/contracts.js'
import type {ModelStateChanged, ServiceEvents} from '../kernel/observability.js'
import type {LaunchRecord} from '../protocol/events.js'
import {PRIVATE_FILE, PRIVATE_FOLDER} from '../kernel/private-home.js'

export interface LaunchHistoryOptions {
  file: string
  log: Logger
  /** Milliseconds since the epoch. */
  now?: () => number
  /** Launches kept; the oldest go first. */
  limit?: number
}

export class LaunchHistory {
  private records: LaunchRecord[] = []
  private readonly now: () => number
  private readonly limit: number
  /** Writes run one after another, each of the whole list as it is then. */
  private writing = Promise.resolve()

  private constructor(private readonly options: LaunchHistoryOptions) {
    this.now = options.now ?? Date.now
    this.limit = options.limit ?? 200
  }

  /**
   * Reads the file (none is an empty history) and follows the seam from then on. A launch the file says is still
   * going was cut off by a service that stopped without saying so (a kill): it is `stopped` now.
   */
  static async open(events: ServiceEvents, options: LaunchHistoryOptions): Promise<LaunchHistory> {
    const history = new LaunchHistory(options)
    history.records = await history.read()
    if (history.end((record) => record.ended === null, 'stopped', 'the service stopped while it ran')) history.save()
    events.on('model', (event) => history.stateChanged(event))
    return history
  }

  /** Newest first, optionally of one model name. */
  list(modelName?: string): LaunchRecord[] {
    return this.records.filter((record) => modelName === undefined || record.model_name === modelName).map((record) => ({...record, data: {...record.data}})).reverse()
  }

  /** The models still running end as `stopped` (the service is stopping), and the file is written. */
  async close(): Promise<void> {
    if (this.end((record) => record.ended === null, 'stopped', 'the service stopped')) this.save()
    await this.writing
  }

  private stateChanged({details = {}, modelName, modelType, reason, state, uid}: ModelStateChanged): void {
    if (state === 'launching') {
      const {model_engine: engine, ...data} = details
      this.records.push({data, ended: null, model_engine: typeof engine === 'string' ? engine : null, model_name: modelName, model_type: modelType, model_uid: uid, outcome: 'launching', reason: null, started: this.now()})
      if (this.records.length > this.limit) this.records.splice(0, this.records.length - this.limit)
    } else {
      const current = this.records.findLast((record) => record.model_uid === uid)
      // A crashed model's terminate only clears it away: the launch ended with the crash. Its relaunch keeps the
      // crash on record until it is ready again.
      if (!current || state === 'restarting' || (state === 'terminated' && current.outcome === 'crashed')) return
      if (state === 'ready') Object.assign(current, {ended: null, outcome: 'running', reason: null})
      else if (state === 'error') Object.assign(current, {ended: this.now(), outcome: current.outcome === 'launching' ? 'failed' : 'crashed', reason: reason ?? null})
      else Object.assign(current, {ended: this.now(), outcome: current.outcome === 'launching' ? 'cancelled' : 'terminated', reason: reason ?? null})
    }

    this.save()
  }

  /** Ends the records `which` picks; answers whether there were any. */
  private end(which: (record: LaunchRecord) => boolean, outcome: LaunchRecord['outcome'], reason: string): boolean {
    const open = this.records.filter(which)
    for (const record of open) Object.assign(record, {ended: this.now(), outcome, reason})
    return open.length > 0
  }

  private async read(): Promise<LaunchRecord[]> {
    try {
      const parsed = JSON.parse(await readFile(this.options.file, 'utf8')) as unknown
      if (Array.isArray(parsed)) return parsed as LaunchRecord[]
      this.options.log.warn(`${this.options.file} is not a list of launches; the launch history starts empty`)
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') this.options.log.warn(`cannot read the launch history ${this.options.file}: ${(error as Error).message}; it starts empty`)
    }

    return []
  }

  private save(): void {
    const text = `${JSON.stringify(this.records, null, 2)}\n`
    this.writing = this.writing
      .then(async () => {
        await mkdir(dirname(this.options.file), {mode: PRIVATE_FOLDER, recursive: true})
        await writeFileAtomic(this.options.file, text, {mode: PRIVATE_FILE})
      })
      .catch((error) => this.options.log.warn(`cannot write the launch history ${this.options.file}: ${(error as Error).message}`))
  }
}
