/**
 * One service per SERVICE_HOME and role. Two services writing one home would corrupt each other's downloads
 * (the cache), registrations and model logs, so each takes a lock, held by proper-lockfile while it runs and
 * released when it stops. What a role writes decides its lock: a supervisor writes `registrations/`, a worker
 * `cache/` and `logs/models/`, and `service-local` both; so one supervisor and one worker may share a home
 * (the spec allows both on one machine), but not two of either, nor anything beside `service-local`.
 *
 * A lock is a folder whose modification time its holder refreshes; one left by a killed service goes stale
 * after STALE_MS. Beside it a small record names the holder (program, pid, host, endpoint) for the message the
 * next service gets, and tells it whether the holder is gone, in which case it waits for the lock to go
 * stale instead of refusing.
 */
import {mkdir, readFile, rename, writeFile} from 'node:fs/promises'
import {hostname} from 'node:os'
import {join} from 'node:path'
import lockfile from 'proper-lockfile'

import {ServiceError} from '../kernel/errors.js'
import {PRIVATE_FILE, PRIVATE_FOLDER} from '../kernel/private-home.js'

export type HomeRole = 'supervisor' | 'worker'

/** Who holds a role's lock, as its record says. */
export interface HomeLockHolder {
  program: string
  pid: number
  host: string
  endpoint?: string
}

export interface HomeLock {
  /** Adds where the service listens to its record, for the message a second service gets. */
  announce(endpoint: string): Promise<void>
  /**
   * Releases the locks; a service calls it at the end of its ordered shutdown. proper-lockfile also releases them as
   * the process exits, but only while its exit hook (signal-exit 3) is still on `process.emit`: execa's signal-exit 4,
   * loaded by a child process started before the lock was taken, puts back the `emit` it found once its last child
   * exits, and with it the hook is gone, so a clean SIGTERM of a service that ran a model left its locks behind.
   */
  release(): Promise<void>
}

export interface HomeLockOptions {
  /** The program taking the lock, as the person started it, e.g. `service-local`. */
  program: string
  /** Whether a process of this machine runs; the holder of a stale-to-be lock is checked with it. */
  isRunning?: (pid: number) => boolean
  /** Told when a lock left by a killed service is waited for, and when this service loses its lock. */
  notify?: (message: string) => void
}

/** How old a lock gets before it counts as left behind; its holder refreshes it every STALE_MS / 2 (proper-lockfile's defaults). */
const STALE_MS = 10_000
const RETRY_MS = 1000

function processRuns(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    // EPERM: it runs, as another user.
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/** Takes the locks of `roles` on `home`, or throws a 409 naming the holder and what to do. */
export async function lockHome(home: string, roles: HomeRole[], options: HomeLockOptions): Promise<HomeLock> {
  const {isRunning = processRuns, notify = (message) => process.stderr.write(`${options.program}: ${message}\n`), program} = options
  const folder = join(home, 'locks')
  await mkdir(folder, {mode: PRIVATE_FOLDER, recursive: true})
  const recordOf = (role: HomeRole) => join(folder, `${role}.json`)
  const record: HomeLockHolder = {host: hostname(), pid: process.pid, program}
  const writeRecords = async () => {
    for (const role of roles) {
      const temporary = `${recordOf(role)}.${process.pid}.tmp`
      await writeFile(temporary, JSON.stringify(record) + '\n', {mode: PRIVATE_FILE})
      await rename(temporary, recordOf(role))
    }
  }

  const releases: Array<() => Promise<void>> = []
  const release = async () => {
    for (const unlock of releases.splice(0).reverse()) await unlock().catch(() => {})
  }

  try {
    for (const role of roles) releases.push(await acquire(role))
  } catch (error) {
    await release()
    throw error
  }

  await writeRecords()
  return {
    async announce(endpoint) {
      record.endpoint = endpoint
      await writeRecords()
    },
    release,
  }

  async function acquire(role: HomeRole): Promise<() => Promise<void>> {
    const lockOptions = {
      lockfilePath: join(folder, `${role}.lock`),
      onCompromised: (error: Error) => notify(`lost the lock on SERVICE_HOME ${home} (${error.message}); another service may now write there too.`),
      realpath: false,
      stale: STALE_MS,
    }
    try {
      return await lockfile.lock(join(folder, role), lockOptions)
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ELOCKED') throw error
    }

    const holder = await readHolder(recordOf(role))
    // A record naming this very process was left by an earlier run in a reused pid namespace: a container started
    // again runs its service as the same pid (1) on the same host name, so "that pid runs" says nothing there.
    if (holder && holder.host === hostname() && (holder.pid === process.pid || !isRunning(holder.pid))) {
      notify(`SERVICE_HOME ${home} was left locked by ${holder.program} (pid ${holder.pid}), which no longer runs; waiting up to ${STALE_MS / 1000} s for its lock to go stale.`)
      try {
        return await lockfile.lock(join(folder, role), {...lockOptions, retries: {factor: 1, maxTimeout: RETRY_MS, minTimeout: RETRY_MS, retries: STALE_MS / RETRY_MS + 2}})
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ELOCKED') throw error
      }
    }

    throw inUse(home, await readHolder(recordOf(role)))
  }
}

async function readHolder(file: string): Promise<HomeLockHolder | undefined> {
  try {
    const holder = JSON.parse(await readFile(file, 'utf8')) as Partial<HomeLockHolder>
    return typeof holder.program === 'string' && Number.isInteger(holder.pid) && typeof holder.host === 'string' ? (holder as HomeLockHolder) : undefined
  } catch {
    return undefined
  }
}

function inUse(home: string, holder: HomeLockHolder | undefined): ServiceError {
  const where = holder && [`pid ${holder.pid}`, ...(holder.host === hostname() ? [] : [`on ${holder.host}`]), ...(holder.endpoint ? [holder.endpoint] : [])].join(', ')
  const who = holder ? `${holder.program} (${where})` : 'another service'
  return new ServiceError(
    409,
    'conflict',
    `SERVICE_HOME ${home} is in use by ${who}; stop that service first, or give this one a folder of its own with SERVICE_HOME=<folder>.`,
  )
}
