/**
 * The side effects of the background build, injected into EngineAutoBuilder so that its tests run without them: a
 * build as a low-priority process group, short commands whose output is read (the probe, the report), and the lock
 * that lets one service on the machine build at a time.
 */
import {execFile, spawn} from 'node:child_process'
import {constants, setPriority} from 'node:os'
import {createInterface} from 'node:readline'
import {promisify} from 'node:util'
import lockfile from 'proper-lockfile'

import type {ProgramFinder} from '../kernel/engine-build-plan.js'

export interface BuildProcess {
  pid?: number
  /** Settles when it has exited, with its exit code (128 + the signal's number when a signal ended it). */
  exited: Promise<{exitCode: number; signal?: string}>
  /** Ends it and everything it started (cmake, the compilers). */
  stop(): void
}

export type BuildStarter = (command: string[], onLine: (line: string) => void) => BuildProcess

/** Runs a short command; its exit code and standard output. */
export type OutputReader = (command: string[]) => Promise<{exitCode: number; stdout: string}>

/** Takes the build lock of `folder`: a release, or undefined when another process holds it. */
export type BuildLock = (folder: string) => Promise<(() => Promise<void>) | undefined>

/** Whether a live process holds the build lock of `folder`. */
export type BuildLockCheck = (folder: string) => Promise<boolean>

/** The lowest priority (`nice -n 19`), so that the build takes only what the models and requests leave. */
const LOWEST_PRIORITY = 19

/**
 * Starts the build in a process group of its own at the lowest priority: through `nice` where it is on PATH, so
 * that the compilers it starts inherit the priority from the first instruction; else lowered right after start.
 */
export function startLowPriorityBuild(findProgram: ProgramFinder): BuildStarter {
  return (command, onLine) => {
    const nice = findProgram('nice')
    const argv = nice ? [nice, '-n', String(LOWEST_PRIORITY), ...command] : command
    const child = spawn(argv[0], argv.slice(1), {detached: true, stdio: ['ignore', 'pipe', 'pipe']})
    if (!nice && child.pid)
      try {
        setPriority(child.pid, LOWEST_PRIORITY)
      } catch {}
    for (const stream of [child.stdout, child.stderr]) createInterface({crlfDelay: Infinity, input: stream}).on('line', onLine)
    const exited = new Promise<{exitCode: number; signal?: string}>((resolve) => {
      child.once('error', (error) => {
        onLine(`could not start ${argv[0]}: ${error.message}`)
        resolve({exitCode: 127})
      })
      child.once('close', (code, signal) => resolve(signal ? {exitCode: 128 + constants.signals[signal], signal} : {exitCode: code ?? 1}))
    })
    return {
      exited,
      pid: child.pid,
      stop() {
        if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return
        try {
          process.kill(-child.pid, 'SIGTERM')
        } catch {}
      },
    }
  }
}

const run = promisify(execFile)

export const readOutput: OutputReader = async ([program, ...args]) => {
  try {
    const {stdout} = await run(program, args, {maxBuffer: 1024 * 1024})
    return {exitCode: 0, stdout}
  } catch (error) {
    const failed = error as {code?: number | string; stdout?: string; message: string}
    return {exitCode: typeof failed.code === 'number' ? failed.code : 127, stdout: failed.stdout ?? failed.message}
  }
}

/** proper-lockfile's lock folder beside the build's output, refreshed while held; one left by a killed service goes stale. */
const LOCK_OPTIONS = {realpath: false, stale: 10_000}
const lockPath = (folder: string) => `${folder}/service-auto-build`

export const takeBuildLock: BuildLock = async (folder) => {
  try {
    return await lockfile.lock(lockPath(folder), {...LOCK_OPTIONS, onCompromised() {}})
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ELOCKED') return undefined
    throw error
  }
}

/**
 * Whether a live process holds the build lock of `folder`: false when none does, or when its holder was killed and
 * the lock has gone stale (no longer refreshed). When the lock cannot be read, it is taken as held, so that only
 * evidence of a gone holder changes what the service reports.
 */
export const buildLockHeld: BuildLockCheck = async (folder) => lockfile.check(lockPath(folder), LOCK_OPTIONS).catch(() => true)
