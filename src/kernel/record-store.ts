/**
 * Records a plugin keeps between requests and restarts (stored OpenAI responses): one private JSON file each in a
 * folder of SERVICE_HOME, bounded in count and bytes, the oldest dropped to make room. Ids come from requests, so
 * only plain ones name a file; any other is simply not found. Without a home (a kernel made for a command or a
 * test) the records are kept in memory, under the same bounds.
 */
import {mkdir, readdir, readFile, rm, stat} from 'node:fs/promises'
import {join} from 'node:path'
import writeFileAtomic from 'write-file-atomic'

import type {RecordStore, RecordStoreBounds} from './contracts.js'

import {PRIVATE_FILE, PRIVATE_FOLDER} from './private-home.js'

const RECORD_ID = /^[\w-]{1,128}$/
export const STORE_NAME = /^[a-z][a-z0-9-]{0,63}$/
const SUFFIX = '.json'

export function recordStore(folder: string | undefined, bounds: RecordStoreBounds): RecordStore {
  return folder ? new FileRecordStore(folder, bounds) : new MemoryRecordStore(bounds)
}

/** Sizes by id, oldest first, and the eviction both stores share. */
abstract class BoundedStore implements RecordStore {
  protected readonly sizes = new Map<string, number>()
  private held = 0
  /** Writes and removals one after another, so that the sizes always describe what is there. */
  private queue: Promise<unknown> = Promise.resolve()

  constructor(private readonly bounds: RecordStoreBounds) {}

  protected abstract ready(): Promise<void>
  protected abstract write(id: string, text: string): Promise<void>
  protected abstract read(id: string): Promise<string | undefined>
  protected abstract remove(id: string): Promise<void>

  protected track(id: string, bytes: number): void {
    this.held += bytes - (this.sizes.get(id) ?? 0)
    this.sizes.delete(id)
    this.sizes.set(id, bytes)
  }

  private untrack(id: string): void {
    this.held -= this.sizes.get(id) ?? 0
    this.sizes.delete(id)
  }

  private serial<T>(work: () => Promise<T>): Promise<T> {
    const next = this.queue.then(async () => {
      await this.ready()
      return work()
    })
    this.queue = next.catch(() => {})
    return next
  }

  put(id: string, record: unknown): Promise<void> {
    if (!RECORD_ID.test(id)) return Promise.reject(new Error(`record id ${JSON.stringify(id)} is not plain`))
    const text = JSON.stringify(record)
    const bytes = Buffer.byteLength(text)
    if (bytes > this.bounds.maxBytes) return Promise.reject(new Error(`record ${id} is ${bytes} bytes, more than the ${this.bounds.maxBytes} the store holds`))
    return this.serial(async () => {
      await this.write(id, text)
      this.track(id, bytes)
      for (const oldest of this.sizes.keys()) {
        if (this.held <= this.bounds.maxBytes && this.sizes.size <= this.bounds.maxCount) break
        if (oldest === id) continue
        await this.remove(oldest)
        this.untrack(oldest)
      }
    })
  }

  async get(id: string): Promise<unknown> {
    if (!RECORD_ID.test(id)) return undefined
    const text = await this.serial(async () => (this.sizes.has(id) ? this.read(id) : undefined))
    return text === undefined ? undefined : JSON.parse(text)
  }

  async delete(id: string): Promise<boolean> {
    if (!RECORD_ID.test(id)) return false
    return this.serial(async () => {
      if (!this.sizes.has(id)) return false
      await this.remove(id)
      this.untrack(id)
      return true
    })
  }
}

class MemoryRecordStore extends BoundedStore {
  private readonly texts = new Map<string, string>()
  protected async ready() {}
  protected async write(id: string, text: string) {
    this.texts.set(id, text)
  }

  protected async read(id: string) {
    return this.texts.get(id)
  }

  protected async remove(id: string) {
    this.texts.delete(id)
  }
}

class FileRecordStore extends BoundedStore {
  private loaded?: Promise<void>

  constructor(
    private readonly folder: string,
    bounds: RecordStoreBounds,
  ) {
    super(bounds)
  }

  /** The records a previous run left, oldest first by the time they were written. */
  protected ready(): Promise<void> {
    this.loaded ??= (async () => {
      await mkdir(this.folder, {mode: PRIVATE_FOLDER, recursive: true})
      const names = (await readdir(this.folder)).filter((name) => name.endsWith(SUFFIX) && RECORD_ID.test(name.slice(0, -SUFFIX.length)))
      const found = await Promise.all(names.map(async (name) => ({id: name.slice(0, -SUFFIX.length), ...(await stat(join(this.folder, name)))})))
      for (const {id, size} of found.sort((a, b) => a.mtimeMs - b.mtimeMs || a.id.localeCompare(b.id))) this.track(id, size)
    })()
    return this.loaded
  }

  private fileOf(id: string) {
    return join(this.folder, id + SUFFIX)
  }

  protected async write(id: string, text: string) {
    await writeFileAtomic(this.fileOf(id), text, {mode: PRIVATE_FILE})
  }

  protected async read(id: string) {
    try {
      return await readFile(this.fileOf(id), 'utf8')
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
      throw error
    }
  }

  protected async remove(id: string) {
    await rm(this.fileOf(id), {force: true})
  }
}
