/**
 * What building an engine takes, checked before anything runs: the engine's declared build with each program it
 * needs looked up on PATH. `servicectl engine build` and the service's background build (src/service/
 * engine-auto-build.ts) both start from it, so they agree on what "this machine can build" means.
 */
import {accessSync, constants, statSync} from 'node:fs'
import {delimiter, join} from 'node:path'

import type {AutomaticBuild, BuildRequirement} from './engine-build-contract.js'
import type {Kernel} from './kernel.js'

import {badRequest, notFound, ServiceError} from './errors.js'

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
  /** How the service may run this build by itself, when the engine allows it. */
  auto?: AutomaticBuild
}

/** Where `program` is on PATH, or undefined. */
export type ProgramFinder = (program: string) => string | undefined

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
    auto: build.auto,
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
