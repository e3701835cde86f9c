/**
 * One file from a hub to the cache, robustly: bytes go to `<file>.part` and the file is moved into place
 * only once it has the size and SHA-256 the hub lists. A dropped or stalled connection resumes where it
 * stopped with an HTTP Range request; failures in a row are retried with exponential backoff, and any
 * attempt that made progress resets that count, so a long download over a flaky link keeps going.
 */
import {createHash, type Hash} from 'node:crypto'
import {createReadStream} from 'node:fs'
import {mkdir, open, rename, rm, stat, truncate} from 'node:fs/promises'
import {basename, dirname} from 'node:path'
import {setTimeout as sleep} from 'node:timers/promises'

import type {Logger} from '../kernel/contracts.js'
import type {Hub} from './hubs.js'

import {ServiceError} from '../kernel/errors.js'
import {formatBytes} from '../util/format.js'
import {isTransient, networkReason, unreachable} from './hubs.js'

export interface TransferOptions {
  hub: Hub
  url: string
  /** Final path; the partial file is `${target}.part`. */
  target: string
  size: number | null
  sha256: string | null
  signal: AbortSignal
  /** Bytes of this file on disk so far, after every chunk. */
  onBytes(bytes: number): void
  log: Logger
  fetch?: typeof fetch
  /** Failed attempts in a row (without any progress) before giving up. */
  maxAttempts?: number
  /** An attempt that receives nothing for this long is dropped and retried. */
  stallTimeoutMs?: number
  /** Backoff before the n-th retry in a row: `retryDelayMs * 2^(n-1)`, at most 30 s. */
  retryDelayMs?: number
}

export const partPath = (target: string) => `${target}.part`

/** Bytes queued for the disk before the network is paused; large enough to keep both busy. */
const WRITE_BUFFER = 8 << 20
const SYNC_EVERY = 64 << 20

/** A failure worth another attempt: the connection, a stall, or a hub that is briefly busy. */
class Retryable extends Error {}

const cancelled = () => new ServiceError(499, 'request_aborted', 'the download was cancelled')

async function sizeOf(path: string): Promise<number> {
  try {
    return (await stat(path)).size
  } catch {
    return 0
  }
}

/** The hash of a resumed file's first `bytes`, read again from disk; a cancel stops the reading (gigabytes take seconds). */
async function hashOf(path: string, bytes: number, signal: AbortSignal): Promise<Hash> {
  const hash = createHash('sha256')
  if (bytes === 0) return hash
  for await (const chunk of createReadStream(path, {end: bytes - 1, highWaterMark: 1 << 20, signal})) hash.update(chunk as Buffer)
  return hash
}


function diskError(error: NodeJS.ErrnoException, path: string): ServiceError {
  if (error.code === 'ENOSPC') return new ServiceError(507, 'insufficient_storage', `the disk filled up while writing ${path}; free some space (servicectl remove-cache) and launch again, which resumes the download.`)
  return new ServiceError(500, 'download_failed', `cannot write ${path}: ${error.message}`)
}

export async function downloadFile(options: TransferOptions): Promise<void> {
  const {hub, log, signal, target, url} = options
  const fetchImpl = options.fetch ?? fetch
  const maxAttempts = options.maxAttempts ?? 5
  const stallTimeoutMs = options.stallTimeoutMs ?? 30_000
  const retryDelayMs = options.retryDelayMs ?? 1000
  const expectedSize = options.size
  const part = partPath(target)
  const name = basename(target)
  await mkdir(dirname(target), {recursive: true})

  // The hash always covers exactly the bytes in the .part file; it is rebuilt from disk when it does not.
  let hash = createHash('sha256')
  let hashed = 0
  const syncHash = async (bytes: number) => {
    if (hashed === bytes || !options.sha256) return
    hash = await hashOf(part, bytes, signal).catch((error: unknown) => {
      throw signal.aborted ? cancelled() : error
    })
    hashed = bytes
  }

  /** Fetches from `offset` to the end; returns the bytes on disk when the body ends. */
  const attempt = async (offset: number): Promise<number> => {
    const controller = new AbortController()
    const stop = () => controller.abort()
    signal.addEventListener('abort', stop, {once: true})
    let stalled = false
    let timer = setTimeout(() => ((stalled = true), controller.abort()), stallTimeoutMs)
    const alive = () => {
      clearTimeout(timer)
      timer = setTimeout(() => ((stalled = true), controller.abort()), stallTimeoutMs)
    }

    try {
      let response: Response
      try {
        response = await fetchImpl(url, {headers: {...hub.headers, ...(offset > 0 ? {range: `bytes=${offset}-`} : {})}, signal: controller.signal})
      } catch (error) {
        if (signal.aborted) throw cancelled()
        throw new Retryable(stalled ? `no answer within ${stallTimeoutMs / 1000} s` : networkReason(error), {cause: error})
      }

      if (!response.ok) {
        await response.body?.cancel().catch(() => {})
        const failure = hub.failure(response, url)
        if (isTransient(response.status)) throw new Retryable(failure.message)
        throw failure
      }

      let append = offset > 0
      const range = /^bytes (\d+)-/.exec(response.headers.get('content-range') ?? '')
      if (append && (response.status !== 206 || Number(range?.[1]) !== offset)) {
        // The server ignored the Range (or answered another one): start over from the first byte.
        log.warn(`${hub.name} did not resume ${name} at byte ${offset}; downloading it from the start`)
        if (response.status === 206) {
          await response.body?.cancel().catch(() => {})
          await truncate(part, 0)
          hash = createHash('sha256')
          hashed = 0
          throw new Retryable('the server resumed at the wrong offset')
        }

        append = false
        offset = 0
        hash = createHash('sha256')
        hashed = 0
      }

      // Writes are queued rather than awaited one by one, so the disk works while the next chunks arrive; the
      // stream is always ended (never destroyed), so every byte counted and hashed is on disk when it closes.
      const file = await open(part, append ? 'a' : 'w').catch(async (error: NodeJS.ErrnoException) => {
        await response.body?.cancel().catch(() => {})
        throw diskError(error, part)
      })
      const out = file.createWriteStream({highWaterMark: WRITE_BUFFER})
      let writeError: NodeJS.ErrnoException | undefined
      out.on('error', (error) => (writeError ??= error))
      const drained = () =>
        new Promise<void>((resolve) => {
          const done = () => {
            out.off('drain', done)
            out.off('error', done)
            resolve()
          }

          out.once('drain', done)
          out.once('error', done)
        })
      // Data is flushed to disk every SYNC_EVERY bytes while more arrives, so the fsync before the file gets
      // its name finds little left to write instead of stalling at the end.
      let unsynced = 0
      let syncing: Promise<void> | undefined
      try {
        for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
          alive()
          // More than the hub lists (a stale listing, an error page from a proxy): no retry would end, as each restarts
          // the file and counts its bytes as progress.
          if (expectedSize !== null && offset + chunk.length > expectedSize)
            throw new ServiceError(
              502,
              'download_corrupt',
              `the download of ${name} from ${url} is corrupt: it is larger than the ${expectedSize} bytes ${hub.name} lists. Nothing was kept; check the hub (or SERVICE_MODEL_SRC's mirror) and launch again.`,
            )
          if (options.sha256) hash.update(chunk)
          hashed += chunk.length
          offset += chunk.length
          unsynced += chunk.length
          if (!out.write(chunk)) await drained()
          if (unsynced >= SYNC_EVERY && !syncing) {
            unsynced = 0
            syncing = file
              .datasync()
              .catch(() => {})
              .finally(() => (syncing = undefined))
          }

          if (writeError) throw diskError(writeError, part)
          options.onBytes(offset)
        }
      } catch (error) {
        if (error instanceof ServiceError) throw error
        if (signal.aborted) throw cancelled()
        throw new Retryable(stalled ? `no data for ${stallTimeoutMs / 1000} s` : networkReason(error), {cause: error})
      } finally {
        await syncing
        await new Promise<void>((resolve) => out.end(resolve))
        if (writeError) throw diskError(writeError, part)
      }

      return offset
    } finally {
      clearTimeout(timer)
      signal.removeEventListener('abort', stop)
    }
  }

  let failures = 0
  let receivedAny = false
  while (true) {
    if (signal.aborted) throw cancelled()
    let offset = await sizeOf(part)
    if (expectedSize !== null && offset > expectedSize) {
      await truncate(part, 0)
      offset = 0
    }

    if (expectedSize !== null && offset === expectedSize) break
    await syncHash(offset)
    if (offset > 0 && failures === 0) log.info(`resuming ${name} at ${formatBytes(offset)}`)
    const before = offset
    try {
      offset = await attempt(offset)
      receivedAny ||= offset > before
      if (expectedSize === null || offset === expectedSize) break
      throw new Retryable(`the connection closed after ${offset} of ${expectedSize} bytes`)
    } catch (error) {
      if (error instanceof ServiceError && error.code === 'download_corrupt') await rm(part, {force: true})
      if (!(error instanceof Retryable)) throw error
      const after = await sizeOf(part)
      receivedAny ||= after > before
      failures = after > before ? 1 : failures + 1
      if (failures >= maxAttempts) {
        if (!receivedAny && after === 0) throw unreachable(hub, url, error.cause ?? error)
        throw new ServiceError(
          502,
          'download_failed',
          `downloading ${name} from ${url} failed ${failures} times in a row (${error.message}); the ${formatBytes(after)} received so far are kept in ${part}, and launching again resumes from there.`,
        )
      }

      const delay = after > before ? 0 : Math.min(30_000, retryDelayMs * 2 ** (failures - 1))
      log.warn(`download of ${name} interrupted at ${formatBytes(after)} (${error.message}); retrying${delay ? ` in ${delay / 1000} s` : ''}`)
      try {
        await sleep(delay, undefined, {signal})
      } catch {
        throw cancelled()
      }
    }
  }

  const size = await sizeOf(part)
  await syncHash(size)
  const digest = options.sha256 ? hash.digest('hex') : null
  if ((expectedSize !== null && size !== expectedSize) || (digest && digest !== options.sha256)) {
    await rm(part, {force: true})
    const what = digest && digest !== options.sha256 ? `its SHA-256 is ${digest} but ${hub.name} lists ${options.sha256}` : `it has ${size} bytes but ${hub.name} lists ${expectedSize}`
    throw new ServiceError(502, 'download_corrupt', `the download of ${name} from ${url} is corrupt: ${what}. Nothing was kept; launch again to download it anew.`)
  }

  // Durable before it gets its final name, so a power cut never leaves a short file that looks complete.
  const file = await open(part, 'r+')
  try {
    await file.datasync()
  } finally {
    await file.close()
  }

  await rename(part, target)
}
