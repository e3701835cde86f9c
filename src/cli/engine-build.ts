/**
 * `servicectl engine build`: runs the build an engine plugin declares, on the machine that serves (as
 * `pip install` compiles on the machine that imports). The plan is checked in full before anything runs, so a
 * missing compiler is named up front rather than ten minutes into a build. Running programs and looking them up
 * on PATH are injected, so every decision here is testable without building anything.
 */
import {spawn} from 'node:child_process'
import {accessSync, constants, statSync} from 'node:fs'
import {constants as osConstants} from 'node:os'
import {delimiter, join} from 'node:path'

import type {BuildRequirement} from '../kernel/contracts.js'
import type {Kernel} from '../kernel/kernel.js'

import {badRequest, notFound, ServiceError} from '../kernel/errors.js'

export interface CheckedRequirement extends BuildRequirement {
  /** Where the first of its programs was found on PATH; absent when none was. */
  found?: string
}

export interface EngineBuildPlan {
  engine: string
  plugin: string
  description: string
  command: string[]
  requirements: CheckedRequirement[]
  reportCommand?: string[]
}

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

/** Where `program` is on PATH, or undefined. */
export type ProgramFinder = (program: string) => string | undefined

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
 * The build of the engine named `name` (case-insensitive, as `--model-engine` is) with every requirement looked
 * up, or a ServiceError: 404 for an engine that is not installed (naming those that are), 400 for one that has
 * nothing to build.
 */
export function planEngineBuild(kernel: Kernel, name: string, findProgram: ProgramFinder): EngineBuildPlan {
  const engine = kernel.engine(name)
  if (!engine) {
    const installed = [...kernel.engines.values()].map((e) => e.definition.name).sort((a, b) => a.localeCompare(b))
    throw notFound(`no engine named "${name}" is installed here; installed engines: ${installed.join(', ') || '(none)'}.`)
  }

  const {build, name: engineName} = engine.definition
  if (!build)
    throw badRequest(`engine ${engineName} (plugin ${engine.plugin}) has nothing to build: it runs as installed.`, 'model_engine', 'unsupported')
  return {
    command: build.command,
    description: build.description,
    engine: engineName,
    plugin: engine.plugin,
    reportCommand: build.reportCommand,
    requirements: (build.requires ?? []).map((requirement) => {
      const found = requirement.programs.map((program) => findProgram(program)).find((path) => path !== undefined)
      return found ? {...requirement, found} : {...requirement}
    }),
  }
}

/** `a`, `a or b`, `a, b or c`. */
const orList = (words: string[]) => (words.length < 2 ? words.join('') : `${words.slice(0, -1).join(', ')} or ${words.at(-1)}`)

/** The ServiceError to stop on when requirements are missing: each by name, and one `apt install` for them all. */
export function missingRequirementsError(plan: EngineBuildPlan): ServiceError | undefined {
  const missing = plan.requirements.filter((requirement) => !requirement.found)
  if (missing.length === 0) return undefined
  const listed = missing.map(({name, programs}) => (programs.length === 1 && programs[0] === name ? name : `${name} (${orList(programs)})`))
  const packages = missing.flatMap((requirement) => (requirement.aptPackage ? [requirement.aptPackage] : []))
  const hint = packages.length > 0 ? `; on Debian or Ubuntu: sudo apt install ${packages.join(' ')}` : ''
  return badRequest(
    `building ${plan.engine} needs ${listed.join(', ')} on PATH, which ${missing.length === 1 ? 'is' : 'are'} missing. Install ${missing.length === 1 ? 'it' : 'them'} first${hint}.`,
    'requires',
    'unsupported',
  )
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

/** Looks a program up on PATH as a shell does: the first directory holding an executable file of that name. */
export function findOnPath(program: string, path = process.env.PATH ?? ''): string | undefined {
  for (const directory of path.split(delimiter)) {
    if (!directory) continue
    const candidate = join(directory, program)
    try {
      if (!statSync(candidate).isFile()) continue
      accessSync(candidate, constants.X_OK)
      return candidate
    } catch {}
  }

  return undefined
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
