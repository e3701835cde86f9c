/**
 * Requests and tokens per API key (by its name) and per model, by the hour, for `GET /v1/usage` and for the quotas
 * of the day after a restart. Folded from the ServiceEvents seam like the metrics and the log: every request that ran
 * a model counts, with the tokens its model reported. Kept in memory and under SERVICE_HOME (mode 0600, rewritten
 * whole with write-file-atomic a few seconds after a change and when the service stops), so a restart keeps the
 * day's totals. Bounded: hours older than the retention are dropped, and past `maxEntries` the oldest hours go first.
 */
import {mkdir, readFile} from 'node:fs/promises'
import {dirname} from 'node:path'
import writeFileAtomic from 'write-file-atomic'

import type {Logger} from '../kernel/contracts.js'
import type {RequestFinished} from '../kernel/observability.js'
import type {UsageRow} from '../protocol/usage.js'

import {PRIVATE_FILE, PRIVATE_FOLDER} from '../kernel/private-home.js'

const HOUR_MS = 3_600_000
export const USAGE_RETENTION_DAYS = 35
/** Keys × models × hours: 35 days of 24 hours leaves 120 key-and-model pairs an hour before the oldest hours go early. */
const DEFAULT_MAX_ENTRIES = 100_000
const SAVE_DELAY_MS = 5000

interface Entry {
  /** The hour's start, in milliseconds since the epoch. */
  hour: number
  /** The key's name; null without access control. */
  key: string | null
  model: string
  requests: number
  prompt: number
  completion: number
}

export interface UsageQuery {
  since: number
  until: number
  groupBy: 'key' | 'model' | 'key,model'
  /** Only these keys' usage (a caller that is not admin, or one key asked for); every key's when absent. */
  keys?: readonly string[]
}

export interface UsageLedgerOptions {
  /** Where it is kept; in memory only when absent. */
  file?: string
  log?: Logger
  now?: () => number
  maxEntries?: number
}

const isEntry = (value: unknown): value is Entry => {
  const entry = value as Entry
  return (
    typeof entry?.hour === 'number' &&
    (entry.key === null || typeof entry.key === 'string') &&
    typeof entry.model === 'string' &&
    [entry.requests, entry.prompt, entry.completion].every((count) => Number.isSafeInteger(count) && count >= 0)
  )
}

export class UsageLedger {
  private readonly entries = new Map<string, Entry>()
  private readonly now: () => number
  private saveTimer: NodeJS.Timeout | undefined
  private writing: Promise<void> = Promise.resolve()

  private constructor(private readonly options: UsageLedgerOptions) {
    this.now = options.now ?? Date.now
  }

  /** Reads the file when there is one; one that cannot be used is reported and counts as empty. */
  static async open(options: UsageLedgerOptions = {}): Promise<UsageLedger> {
    const ledger = new UsageLedger(options)
    if (options.file) await ledger.read(options.file)
    ledger.prune()
    return ledger
  }

  /** Counts a finished request that ran a model. */
  record(event: RequestFinished): void {
    if (event.modelUid === undefined) return
    const now = this.now()
    const hour = now - (now % HOUR_MS)
    const key = event.apiKey ?? null
    const id = JSON.stringify([hour, key, event.modelUid])
    let entry = this.entries.get(id)
    if (!entry) {
      entry = {completion: 0, hour, key, model: event.modelUid, prompt: 0, requests: 0}
      this.entries.set(id, entry)
      if (this.entries.size > (this.options.maxEntries ?? DEFAULT_MAX_ENTRIES)) this.prune()
    }

    entry.requests++
    entry.prompt += event.promptTokens ?? 0
    entry.completion += event.completionTokens ?? 0
    this.scheduleSave()
  }

  /** Requests and tokens (prompt and completion) of each key since the start of the UTC day, for its quotas after a restart. */
  today(): Map<string, {requests: number; tokens: number}> {
    const now = this.now()
    const day = now - (now % (24 * HOUR_MS))
    const totals = new Map<string, {requests: number; tokens: number}>()
    for (const entry of this.entries.values()) {
      if (entry.hour < day || entry.key === null) continue
      const total = totals.get(entry.key) ?? {requests: 0, tokens: 0}
      total.requests += entry.requests
      total.tokens += entry.prompt + entry.completion
      totals.set(entry.key, total)
    }

    return totals
  }

  /** The usage in [since, until), the hour `since` falls in included, grouped as asked, most tokens first. */
  query({groupBy, keys, since, until}: UsageQuery): UsageRow[] {
    const from = since - (since % HOUR_MS)
    const rows = new Map<string, UsageRow>()
    for (const entry of this.entries.values()) {
      if (entry.hour < from || entry.hour >= until || (keys !== undefined && (entry.key === null || !keys.includes(entry.key)))) continue
      const apiKey = groupBy === 'model' ? null : entry.key
      const model = groupBy === 'key' ? null : entry.model
      const id = JSON.stringify([apiKey, model])
      const row = rows.get(id) ?? {api_key: apiKey, completion_tokens: 0, model, prompt_tokens: 0, requests: 0, total_tokens: 0}
      row.requests += entry.requests
      row.prompt_tokens += entry.prompt
      row.completion_tokens += entry.completion
      row.total_tokens += entry.prompt + entry.completion
      rows.set(id, row)
    }

    return [...rows.values()].sort((a, b) => b.total_tokens - a.total_tokens || b.requests - a.requests || String(a.api_key).localeCompare(String(b.api_key)) || String(a.model).localeCompare(String(b.model)))
  }

  /** Writes what is pending now; settles once it is on disk. */
  async flush(): Promise<void> {
    if (this.saveTimer) {
      clearTimeout(this.saveTimer)
      this.saveTimer = undefined
      this.save()
    }

    await this.writing
  }

  /** Drops the hours past the retention, then the oldest hours until at most `maxEntries` are left. */
  private prune(): void {
    const oldest = this.now() - USAGE_RETENTION_DAYS * 24 * HOUR_MS
    for (const [id, entry] of this.entries) if (entry.hour < oldest) this.entries.delete(id)
    const excess = this.entries.size - (this.options.maxEntries ?? DEFAULT_MAX_ENTRIES)
    if (excess <= 0) return
    const byAge = [...this.entries].sort(([, a], [, b]) => a.hour - b.hour)
    for (const [id] of byAge.slice(0, excess)) this.entries.delete(id)
  }

  private scheduleSave(): void {
    if (!this.options.file || this.saveTimer) return
    this.saveTimer = setTimeout(() => {
      this.saveTimer = undefined
      this.save()
    }, SAVE_DELAY_MS)
    this.saveTimer.unref()
  }

  private save(): void {
    const {file, log} = this.options
    if (!file) return
    this.prune()
    const content = `${JSON.stringify({entries: [...this.entries.values()], version: 1})}\n`
    this.writing = this.writing
      .then(async () => {
        await mkdir(dirname(file), {mode: PRIVATE_FOLDER, recursive: true})
        await writeFileAtomic(file, content, {mode: PRIVATE_FILE})
      })
      .catch((error) => log?.error(`could not write the usage to ${file}: ${(error as Error).message}`))
  }

  private async read(file: string): Promise<void> {
    const {log} = this.options
    let text: string
    try {
      text = await readFile(file, 'utf8')
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') log?.warn(`could not read the usage in ${file}: ${(error as Error).message}; it starts from nothing`)
      return
    }

    try {
      const {entries} = JSON.parse(text) as {entries?: unknown}
      if (!Array.isArray(entries) || !entries.every(isEntry)) throw new Error('it does not hold a list of hourly counts')
      for (const entry of entries) this.entries.set(JSON.stringify([entry.hour, entry.key, entry.model]), entry)
    } catch (error) {
      log?.warn(`ignoring the usage in ${file}, which cannot be used: ${(error as Error).message}`)
    }
  }
}
