/**
 * Python virtual environments for engines whose programs run Python: what an engine declares it always needs
 * (`EngineDefinition.python`), what a registration adds in Xinference's `virtualenv` settings, and the one
 * request both merge into. Pure: validation and merging only; python-env/ creates the environments.
 */
import {badRequest} from './errors.js'

/** What an engine's program needs from Python, whatever model it runs (`EngineDefinition.python`). */
export interface PythonRequirements {
  /** pip requirement strings, e.g. `transformers>=4.40` or `torch==2.13.0`. */
  packages: string[]
}

/**
 * A registration's `virtualenv`, as Xinference writes it: packages added to the engine's (one with the same project
 * name replaces the engine's), and where pip or uv find them.
 */
export interface VirtualEnvSettings {
  packages?: string[]
  index_url?: string | null
  extra_index_url?: string | string[] | null
  find_links?: string | string[] | null
  trusted_host?: string | string[] | null
  /** Also use this machine's pip configuration (`pip config list`: indexes, find-links, constraints); true unless false. */
  inherit_pip_config?: boolean
  no_build_isolation?: boolean
}

/** One environment to create or reuse: the settings merged and normalised, so equal requests compare equal. */
export interface PythonEnvRequest {
  /** Sorted by project name, without duplicates. */
  packages: string[]
  indexUrl: string | null
  extraIndexUrls: string[]
  findLinks: string[]
  trustedHosts: string[]
  inheritPipConfig: boolean
  noBuildIsolation: boolean
}

/** The interpreter of an environment, as `ExternalLaunchContext.python` gives it to the engine's command. */
export interface PythonEnvironment {
  /** `<envDir>/bin/python`: run the program with it (`python -m some.module`). */
  executable: string
  envDir: string
  /** Where the packages' console scripts are (`vllm`, `uvicorn`). */
  binDir: string
}

const PARAM = 'virtualenv'
const LIST_FIELDS = ['extra_index_url', 'find_links', 'trusted_host'] as const
const KNOWN = new Set(['packages', 'index_url', ...LIST_FIELDS, 'inherit_pip_config', 'no_build_isolation'])

/** A requirement's project name as PEP 503 compares it: `Foo_Bar` and `foo-bar` are one project. */
export function projectName(requirement: string): string {
  const name = /^\s*([A-Za-z0-9][A-Za-z0-9._-]*)/.exec(requirement)?.[1] ?? requirement.trim()
  return name.toLowerCase().replaceAll(/[-_.]+/g, '-')
}

const listOf = (value: string | string[] | null | undefined): string[] => (value === undefined || value === null ? [] : Array.isArray(value) ? value : [value])

/**
 * Checks a registration's `virtualenv` and throws a 400 naming the field. A value starting with `-` would reach the
 * installer as an option of its own, so none may.
 */
export function checkVirtualEnv(value: unknown): asserts value is VirtualEnvSettings | undefined {
  if (value === undefined || value === null) return
  if (typeof value !== 'object' || Array.isArray(value)) throw badRequest(`${PARAM} must be an object such as {"packages": ["transformers>=4.40"]}.`, PARAM)
  const settings = value as Record<string, unknown>
  const unknown = Object.keys(settings).find((key) => !KNOWN.has(key))
  if (unknown) throw badRequest(`${PARAM}.${unknown} is not a virtualenv setting; use ${[...KNOWN].join(', ')}.`, `${PARAM}.${unknown}`)
  const text = (field: string, item: unknown, what: string) => {
    if (typeof item !== 'string' || item.trim() === '' || item.trim().startsWith('-') || /[\n\r]/.test(item))
      throw badRequest(`${PARAM}.${field} must hold ${what}: non-empty strings that do not start with "-".`, `${PARAM}.${field}`)
  }

  if (settings.packages !== undefined) {
    if (!Array.isArray(settings.packages)) throw badRequest(`${PARAM}.packages must be a list of pip requirements such as ["transformers>=4.40"].`, `${PARAM}.packages`)
    for (const item of settings.packages) text('packages', item, 'pip requirements such as "six==1.17.0"')
  }

  if (settings.index_url !== undefined && settings.index_url !== null) text('index_url', settings.index_url, 'the URL of a package index')
  for (const field of LIST_FIELDS) {
    const given = settings[field]
    if (given === undefined || given === null) continue
    if (typeof given !== 'string' && !Array.isArray(given)) throw badRequest(`${PARAM}.${field} must be a string or a list of strings.`, `${PARAM}.${field}`)
    for (const item of listOf(given as string | string[])) text(field, item, field === 'trusted_host' ? 'host names' : 'URLs or folders')
  }

  for (const field of ['inherit_pip_config', 'no_build_isolation'])
    if (settings[field] !== undefined && typeof settings[field] !== 'boolean') throw badRequest(`${PARAM}.${field} must be true or false.`, `${PARAM}.${field}`)
}

/** The engine's packages with the registration's settings over them, normalised (see `PythonEnvRequest`). */
export function mergeVirtualEnv(engine: PythonRequirements, settings: VirtualEnvSettings | undefined): PythonEnvRequest {
  const byProject = new Map<string, string>()
  for (const requirement of [...engine.packages, ...(settings?.packages ?? [])]) byProject.set(projectName(requirement), requirement.trim())
  const sortedUnique = (values: string[]) => [...new Set(values.map((value) => value.trim()))].sort()
  return {
    extraIndexUrls: sortedUnique(listOf(settings?.extra_index_url)),
    findLinks: sortedUnique(listOf(settings?.find_links)),
    indexUrl: settings?.index_url?.trim() || null,
    inheritPipConfig: settings?.inherit_pip_config ?? true,
    noBuildIsolation: settings?.no_build_isolation ?? false,
    packages: [...byProject.keys()].sort().map((name) => byProject.get(name)!),
    trustedHosts: sortedUnique(listOf(settings?.trusted_host)),
  }
}

/** Why an engine's `python` declaration cannot be used, or undefined when it can. */
export function pythonRequirementsProblem(python: unknown, external: boolean): string | undefined {
  if (!external) return 'python packages are installed for external programs only; give the engine an `external` program'
  const packages = (python as PythonRequirements | null)?.packages
  if (!Array.isArray(packages) || packages.some((item) => typeof item !== 'string' || item.trim() === '' || item.trim().startsWith('-')))
    return 'python.packages must be a list of pip requirement strings (none starting with "-")'
  return undefined
}
