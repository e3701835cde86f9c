/**
 * Starts an external engine's program (see kernel/external-engine.ts) with execa: its stdout and stderr are appended
 * to the model's log file and their last lines kept for error reports. Each program leads a process group of its
 * own, so a stop reaches the workers it forks too (vLLM's engine core, tensor-parallel ranks), and every group still
 * alive when the service exits is killed with it.
 */
import type {Readable} from 'node:stream'

import {openPrivateLogFile} from '../util/logger.js'

export interface ProgramSpawnOptions {
  file: string
  args: string[]
  /** Added to the service's own environment. */
  env: Record<string, string>
  cwd?: string
  logFile: string
}

export interface RunningProgram {
  pid?: number
  exited: Promise<{exitCode: number | null; signal: string | null}>
  /** Signals the program's whole process group. */
  kill(signal: NodeJS.Signals): void
  /** Its last lines of output, oldest first. */
  outputTail(): string[]
}

export type SpawnProgram = (options: ProgramSpawnOptions) => RunningProgram

const TAIL_LINES = 20

/** Process groups of programs still running; killed if the service exits without stopping them. */
const liveGroups = new Set<number>()

function killGroup(pid: number, signal: NodeJS.Signals) {
  try {
    process.kill(-pid, signal)
  } catch {
    // Already gone.
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

/** Keeps the last lines written to the streams, and any line added by the spawner itself. */
function tailOf(streams: Readable[]) {
  const lines: string[] = []
  let partial = ''
  const add = (text: string) => {
    const pieces = (partial + text).split('\n')
    partial = pieces.pop() ?? ''
    lines.push(...pieces.filter((line) => line.trim() !== ''))
    lines.splice(0, Math.max(0, lines.length - TAIL_LINES))
  }

  for (const stream of streams) stream.on('data', (chunk: Buffer) => add(chunk.toString()))
  return {add, lines: () => (partial.trim() ? [...lines, partial] : [...lines]).slice(-TAIL_LINES)}
}

/** The real spawner. execa is loaded by the first launch of an external engine rather than at start. */
export async function programSpawner(): Promise<SpawnProgram> {
  const {execa} = await import('execa')
  killLiveGroupsOnExit()
  return ({args, cwd, env, file, logFile}) => {
    const log = openPrivateLogFile(logFile)
    const child = execa(file, args, {buffer: false, cwd, detached: true, env, reject: false, stderr: 'pipe', stdin: 'ignore', stdout: 'pipe'})
    const {pid} = child
    if (pid !== undefined) liveGroups.add(pid)
    child.stdout.pipe(log, {end: false})
    child.stderr.pipe(log, {end: false})
    const tail = tailOf([child.stdout, child.stderr])
    const exited = child.then(async (result) => {
      if (pid !== undefined) {
        liveGroups.delete(pid)
        // Whatever the program forked dies with it.
        killGroup(pid, 'SIGKILL')
      }

      // A program that cannot be started at all (no such file) says why only here.
      if (result.failed && result.exitCode === undefined && !result.signal) {
        log.write(`${result.shortMessage}\n`)
        tail.add(`${result.shortMessage}\n`)
      }

      await new Promise<void>((resolve) => log.end(resolve))
      return {exitCode: result.exitCode ?? null, signal: result.signal ?? null}
    })
    return {
      exited,
      kill: (signal) => (pid === undefined ? child.kill(signal) : killGroup(pid, signal)),
      outputTail: tail.lines,
      pid,
    }
  }
}
