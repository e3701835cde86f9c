/**
 * Starts an external engine's program (see kernel/external-engine.ts) with execa: each line of its stdout and stderr
 * is appended to the model's log file as a timestamped log line (output-log.ts), and its last lines kept for error
 * reports. Each program leads a process group of its own, so a stop reaches the workers it forks too (vLLM's engine core, tensor-parallel ranks), and every group still
 * alive when the service exits is killed with it, even when the service is killed with no chance to clean up.
 */
import {spawn} from 'node:child_process'

import {openPrivateLogFile} from '../util/logger.js'
import {outputLog} from './output-log.js'
import {pythonPathWithHelpers} from './python-helpers.js'

export interface ProgramSpawnOptions {
  file: string
  args: string[]
  /** Added to the service's own environment; `PYTHONPATH` also gets the service's Python helpers (python-helpers.ts). */
  env: Record<string, string>
  cwd?: string
  logFile: string
}

export interface ProgramExit {
  exitCode: number | null
  signal: string | null
}

export interface RunningProgram {
  pid?: number
  /** Settles when the program itself exits, even while processes it forked live on (they are killed then). */
  exited: Promise<ProgramExit>
  /** Signals the program's whole process group. */
  kill(signal: NodeJS.Signals): void
  /** Its last lines of output, oldest first. */
  outputTail(): string[]
}

export type SpawnProgram = (options: ProgramSpawnOptions) => RunningProgram

const TAIL_LINES = 20
/** How long an exited program's pipes may take to close once its group is killed. */
const PIPES_CLOSE_MS = 1000

/** Process groups of programs still running; killed if the service exits without stopping them. */
const liveGroups = new Set<number>()

function killGroup(pid: number, signal: NodeJS.Signals) {
  try {
    process.kill(-pid, signal)
  } catch {
    // Already gone.
  }
}

/** What `promise` settles with, or undefined if it has not within `ms`. */
async function settledWithin<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), ms)))
  try {
    return await Promise.race([promise, timeout])
  } finally {
    clearTimeout(timer)
  }
}

let exitHookInstalled = false
function killLiveGroupsOnExit() {
  if (exitHookInstalled) return
  exitHookInstalled = true
  process.once('exit', () => {
    for (const pid of liveGroups) killGroup(pid, 'SIGKILL')
  })
}

/**
 * The program's group is ended even if the service itself is killed (`kill -9`, out of memory), when no exit hook runs:
 * a sentinel shell, in a session of its own, reads a pipe from the service that is never written; the kernel closes it
 * when the service dies however it dies, and the sentinel then stops the group (SIGTERM, then SIGKILL after a grace).
 * While the program runs normally the sentinel is killed with it, so it never signals a group whose id was reused.
 */
const SENTINEL = 'while read -r _; do :; done; kill -TERM -"$1" 2>/dev/null; sleep 5; kill -KILL -"$1" 2>/dev/null'

function guardGroup(pid: number): () => void {
  const sentinel = spawn('sh', ['-c', SENTINEL, 'program-sentinel', String(pid)], {detached: true, stdio: ['pipe', 'ignore', 'ignore']})
  sentinel.on('error', () => {})
  sentinel.stdin?.on('error', () => {})
  // Neither keeps the service running.
  sentinel.unref()
  ;(sentinel.stdin as unknown as {unref?: () => void} | null)?.unref?.()
  return () => sentinel.kill('SIGKILL')
}

/** The real spawner. execa is loaded by the first launch of an external engine rather than at start. */
export async function programSpawner(): Promise<SpawnProgram> {
  const {execa} = await import('execa')
  killLiveGroupsOnExit()
  return ({args, cwd, env, file, logFile}) => {
    const log = openPrivateLogFile(logFile)
    // Every program gets the service's Python helpers first on its PYTHONPATH, after whatever its engine put there.
    const withHelpers = {...env, PYTHONPATH: pythonPathWithHelpers(env.PYTHONPATH ?? process.env.PYTHONPATH)}
    const child = execa(file, args, {buffer: false, cwd, detached: true, env: withHelpers, reject: false, stderr: 'pipe', stdin: 'ignore', stdout: 'pipe'})
    const {pid} = child
    if (pid !== undefined) liveGroups.add(pid)
    const unguard = pid === undefined ? () => {} : guardGroup(pid)
    const output = outputLog(log, {format: env.SERVICE_LOG_FORMAT === 'json' ? 'json' : 'text', name: 'program', tailLines: TAIL_LINES})
    output.follow('stdout', child.stdout)
    output.follow('stderr', child.stderr)
    // Settled by the program's own exit: execa's result waits for its pipes to close, which whatever it forked keeps
    // open as long as it lives, so a program that dies leaving a worker behind would never be seen to exit.
    const ownExit = new Promise<ProgramExit>((resolve) => child.nodeChildProcess.once('exit', (exitCode, signal) => resolve({exitCode, signal})))
    const exited = (async () => {
      // One that cannot be started at all (no such file) never exits; execa's result says so, and why.
      const exit = await Promise.race([ownExit, child.then((result) => ({exitCode: result.exitCode ?? null, signal: result.signal ?? null}))])
      unguard()
      if (pid !== undefined) {
        liveGroups.delete(pid)
        // Whatever the program forked dies with it, and no longer holds its pipes open.
        killGroup(pid, 'SIGKILL')
      }

      // Its last lines, still in the pipes, are read before the exit is reported with them; a process that left the
      // group and holds them open is not waited for.
      const result = await settledWithin(child, PIPES_CLOSE_MS)
      if (!result) {
        child.stdout?.destroy()
        child.stderr?.destroy()
      }

      if (result?.failed && result.exitCode === undefined && !result.signal) output.service(result.shortMessage ?? 'the program could not be started')

      await new Promise<void>((resolve) => log.end(resolve))
      return exit
    })()
    return {
      exited,
      kill: (signal) => (pid === undefined ? child.kill(signal) : killGroup(pid, signal)),
      outputTail: output.lines,
      pid,
    }
  }
}
