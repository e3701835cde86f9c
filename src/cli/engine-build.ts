/**
 * `servicectl engine build`: runs the build an engine plugin declares, on the machine that serves (as
 * `pip install` compiles on the machine that imports). The plan is checked in full before anything runs, so a
 * missing compiler is named up front rather than ten minutes into a build. Running programs and looking them up
 * on PATH are injected, so every decision here is testable without building anything.
 */
import {spawn} from 'node:child_process'
import {constants as osConstants} from 'node:os'

import type {EngineBuildPlan} from '../kernel/engine-build-plan.js'

import {missingRequirementsError} from '../kernel/engine-build-plan.js'
import {ServiceError} from '../kernel/errors.js'

export {type CheckedRequirement, type EngineBuildPlan, findOnPath, missingRequirementsError, planEngineBuild, type ProgramFinder} from '../kernel/engine-build-plan.js'

export interface ProgramRun {
  /** The program's exit code; 128 + the signal's number when a signal ended it, as shells report it. */
  exitCode: number
  /** The signal that ended it, if one did. */
  signal?: string
  /** Its standard output, when it was captured. */
  stdout?: string
}

/**
 * Runs `command` (program, then arguments) with no shell. `inherit` hands it the person's terminal, for a long
 * build whose progress they watch; `capture` keeps standard output to show it afterwards.
 */
export type ProgramRunner = (command: string[], stdout: 'capture' | 'inherit') => Promise<ProgramRun>

export interface EngineBuildResult {
  plan: EngineBuildPlan
  exitCode: number
  signal?: string
  /** What the engine's report command printed after a successful build. */
  report?: string
  /** Why the report could not be had, when its command failed; the build itself still succeeded. */
  reportProblem?: string
}

/**
 * Runs a checked plan: the build with the person's terminal, then, if it succeeded, the engine's report of which
 * build it now uses. Refuses (throws) before running anything when a requirement is missing.
 */
export async function runEngineBuild(plan: EngineBuildPlan, run: ProgramRunner): Promise<EngineBuildResult> {
  const missing = missingRequirementsError(plan)
  if (missing) throw missing
  const built = await runOrExplain(run, plan.command, 'inherit')
  const result: EngineBuildResult = {exitCode: built.exitCode, plan, signal: built.signal}
  if (built.exitCode !== 0 || !plan.reportCommand) return result
  const reported = await runOrExplain(run, plan.reportCommand, 'capture')
  if (reported.exitCode === 0) result.report = reported.stdout?.trim()
  else result.reportProblem = `${plan.reportCommand.join(' ')} ended with exit code ${reported.exitCode}`
  return result
}

async function runOrExplain(run: ProgramRunner, command: string[], stdout: 'capture' | 'inherit'): Promise<ProgramRun> {
  try {
    return await run(command, stdout)
  } catch (error) {
    throw new ServiceError(500, 'internal_error', `could not start ${command[0]}: ${(error as Error).message}`)
  }
}

/**
 * The real runner: a child process with no shell, whose standard error always goes to the person's terminal;
 * `stderr` sends its standard output there too, keeping ours for a result such as `--json`.
 */
export function runProgram(command: string[], stdout: 'capture' | 'inherit' | 'stderr'): Promise<ProgramRun> {
  return new Promise((resolve, reject) => {
    const [program, ...args] = command
    const child = spawn(program, args, {stdio: ['inherit', stdout === 'capture' ? 'pipe' : stdout === 'stderr' ? process.stderr : 'inherit', 'inherit']})
    let captured = ''
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => (captured += chunk))
    child.once('error', reject)
    child.once('close', (code, signal) => {
      const exitCode = code ?? 128 + (signal ? osConstants.signals[signal] : 0)
      resolve({exitCode, signal: signal ?? undefined, stdout: stdout === 'capture' ? captured : undefined})
    })
  })
}
