/**
 * What a registration or a launch makes the service run or read beyond the request itself: a Python module the
 * flexible launcher imports, a package from somewhere other than a plain index name and version, a package index,
 * a model repository's own code, environment variables of the model's process, a path on the service's machine.
 * Every such field is found here, and one check decides who may ask for it, so that `models:register` and
 * `models:start` alone never amount to a shell on the server (and never tell whether a path exists).
 *
 * The rule: an operator's allow-list, when set, is all the service accepts for its kind of field, from admins too;
 * when unset, an admin may name anything and other users nothing. With access control off every caller is an
 * admin, so the allow-lists are what bound them. Paths follow SERVICE_ALLOWED_MODEL_DIRS, whose folders the path
 * checks themselves enforce (model-files.ts), without looking at anything outside them.
 */
import type {Authority, EngineDefinition} from './contracts.js'

import {ServiceError} from './errors.js'
import {ALLOWED_MODEL_DIRS_SETTING} from './model-files.js'

/** A caller no one vouched for: what a launch or registration gets when its caller does not say who it is. */
export const NO_AUTHORITY: Authority = {admin: false, username: null}

/** Every caller when access control is off, and the service itself (relaunching what was running, loading its registrations). */
export const SERVICE_AUTHORITY: Authority = {admin: true, username: null}

/** The operator's allow-lists; an empty list is an unset one. */
export interface ReachSettings {
  allowedModelDirs: readonly string[]
  allowedPythonModules: readonly string[]
  allowedPipSources: readonly string[]
}

export const NO_ALLOW_LISTS: ReachSettings = {allowedModelDirs: [], allowedPipSources: [], allowedPythonModules: []}

export type {Authority} from './contracts.js'

export const ALLOWED_PYTHON_MODULES_SETTING = 'SERVICE_ALLOWED_PYTHON_MODULES'
export const ALLOWED_PIP_SOURCES_SETTING = 'SERVICE_ALLOWED_PIP_SOURCES'

export type ReachKind = 'python-module' | 'pip-source' | 'local-path' | 'repository-code' | 'environment'

/** One field that reaches beyond the request: where it is (`launcher_args.module`) and what it names. */
export interface ReachItem {
  field: string
  kind: ReachKind
  value: string
}

/** How an engine parameter reaches beyond the request (`EngineParameter.reaches`). */
export type ParameterReach = 'file' | 'folder' | 'template-or-file' | 'repository-code'

const PYTHON_MODULE = /^[A-Za-z_]\w{0,99}(\.[A-Za-z_]\w{0,99}){0,15}$/
const VERSION_CLAUSE = String.raw`(===|==|~=|!=|<=|>=|<|>)\s*[A-Za-z0-9.*+!_-]+`
/**
 * A requirement an index resolves by name: a project name, extras, version clauses and an environment marker, but
 * no URL, path or VCS reference (PEP 508's `name @ url`), which would fetch code from wherever it names.
 */
const PLAIN_REQUIREMENT = new RegExp(
  String.raw`^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?(\s*\[\s*[A-Za-z0-9._-]+(\s*,\s*[A-Za-z0-9._-]+)*\s*\])?(\s*${VERSION_CLAUSE}(\s*,\s*${VERSION_CLAUSE})*)?(\s*;[\w\s.'"<>=!~(),-]+)?$`,
)
const MAX_REQUIREMENT = 200

export const isPlainRequirement = (requirement: string) => requirement.length <= MAX_REQUIREMENT && PLAIN_REQUIREMENT.test(requirement.trim())

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value)
const listOf = (value: unknown): unknown[] => (value === undefined || value === null ? [] : Array.isArray(value) ? value : [value])
const present = (value: unknown) => value !== undefined && value !== null && value !== '' && !(Array.isArray(value) && value.length === 0) && !(isObject(value) && Object.keys(value).length === 0)

/** The pip requirements of a list (`virtualenv.packages`, `virtual_env_packages`) that name a source of their own, or are not text at all. */
function requirementItems(packages: unknown, field: string): ReachItem[] {
  return listOf(packages).flatMap((requirement, index) =>
    typeof requirement === 'string' && isPlainRequirement(requirement) ? [] : [{field: `${field}[${index}]`, kind: 'pip-source' as const, value: String(requirement).trim()}],
  )
}

/** The fields of a registration (a model family, in Xinference's format) that reach beyond it. */
export function registrationReach(family: Record<string, unknown>): ReachItem[] {
  const items: ReachItem[] = []
  const launcherArgs = family.launcher_args
  if (isObject(launcherArgs)) {
    if (present(launcherArgs.module)) items.push({field: 'launcher_args.module', kind: 'python-module', value: String(launcherArgs.module)})
    if (present(launcherArgs.path)) items.push({field: 'launcher_args.path', kind: 'local-path', value: String(launcherArgs.path)})
  }

  const virtualenv = family.virtualenv
  if (isObject(virtualenv)) {
    items.push(...requirementItems(virtualenv.packages, 'virtualenv.packages'))
    if (present(virtualenv.index_url)) items.push({field: 'virtualenv.index_url', kind: 'pip-source', value: String(virtualenv.index_url)})
    for (const field of ['extra_index_url', 'find_links', 'trusted_host'])
      for (const [index, value] of listOf(virtualenv[field]).entries())
        if (present(value)) items.push({field: Array.isArray(virtualenv[field]) ? `virtualenv.${field}[${index}]` : `virtualenv.${field}`, kind: 'pip-source', value: String(value)})
  }

  for (const [index, spec] of listOf(family.model_specs).entries()) {
    if (!isObject(spec)) continue
    const uris: Array<[string, unknown]> = [[`model_specs[${index}].model_uri`, spec.model_uri]]
    if (isObject(spec.model_src)) for (const [hub, source] of Object.entries(spec.model_src)) uris.push([`model_specs[${index}].model_src.${hub}.model_uri`, isObject(source) ? source.model_uri : undefined])
    for (const [field, uri] of uris) if (typeof uri === 'string' && uri.startsWith('file:')) items.push({field, kind: 'local-path', value: uri})
  }

  return items
}

/**
 * The fields of a launch that reach beyond it: the engine's parameters that declare `reaches`, and the keys
 * Xinference's clients send for a virtual environment, environment variables, a local model path and LoRA adapters.
 */
export function launchReach(request: Record<string, unknown>, engine: Pick<EngineDefinition, 'parameters'>): ReachItem[] {
  const items: ReachItem[] = []
  for (const [name, declared] of Object.entries(engine.parameters)) {
    const value = request[name]
    // A switch turned off asks for nothing, whether it came as JSON or, from the CLI, as text.
    if (!declared.reaches || value === undefined || value === null || value === false || String(value).toLowerCase() === 'false') continue
    if (declared.reaches === 'repository-code') items.push({field: name, kind: 'repository-code', value: String(value)})
    // A template given inline is text for the engine's sandboxed Jinja; only a path reads a file.
    else if (declared.reaches !== 'template-or-file' || (typeof value === 'string' && !value.includes('{'))) items.push({field: name, kind: 'local-path', value: String(value)})
  }

  items.push(...requirementItems(request.virtual_env_packages, 'virtual_env_packages'))
  if (present(request.envs)) items.push({field: 'envs', kind: 'environment', value: JSON.stringify(request.envs)})
  if (present(request.model_path)) items.push({field: 'model_path', kind: 'local-path', value: String(request.model_path)})
  const peft = request.peft_model_config
  if (isObject(peft))
    for (const [index, lora] of listOf(peft.lora_list).entries())
      if (isObject(lora) && present(lora.local_path)) items.push({field: `peft_model_config.lora_list[${index}].local_path`, kind: 'local-path', value: String(lora.local_path)})
  return items
}

/**
 * The one check every launch passes through, where its parameters are resolved: Xinference's launch keys included,
 * whatever engine parameter they become.
 */
export function checkLaunchReach(request: Record<string, unknown>, engine: Pick<EngineDefinition, 'parameters'>, authority: Authority, settings: ReachSettings): void {
  checkReach(launchReach(request, engine), authority, settings)
}

/** Whether `value` is a listed source or under one (a URL or folder followed by `/`). */
function underSource(value: string, sources: readonly string[]): boolean {
  return sources.some((source) => value === source || value.startsWith(source.endsWith('/') ? source : `${source}/`))
}

const hostOf = (url: string) => {
  try {
    return new URL(url).hostname
  } catch {
    return undefined
  }
}

/** A requirement's own source: the URL or path after `name @`, else the whole requirement (a path, a `git+` URL). */
const sourceOf = (requirement: string) => /^[^@]*@\s*(.+)$/.exec(requirement)?.[1].trim() ?? requirement

function listed(item: ReachItem, settings: ReachSettings): boolean {
  if (item.kind === 'python-module') return settings.allowedPythonModules.some((allowed) => item.value === allowed || item.value.startsWith(`${allowed}.`))
  if (item.field.startsWith('virtualenv.trusted_host')) return settings.allowedPipSources.some((source) => hostOf(source) === item.value)
  return underSource(item.field.startsWith('virtualenv.') && !item.field.startsWith('virtualenv.packages') ? item.value : sourceOf(item.value), settings.allowedPipSources)
}

const WHAT: Record<ReachKind, string> = {
  'environment': 'sets environment variables of the model\'s process (which choose what code it loads)',
  'local-path': "names a path on the service's machine",
  'pip-source': 'installs Python packages from a source other than a plain package name and version (a URL, a path, a VCS reference or a package index)',
  'python-module': 'makes the service import and call a Python module',
  'repository-code': "runs the model repository's own Python code",
}

/** The operator's setting that lists what a kind of field may name, or none where only admins decide. */
const SETTING: Partial<Record<ReachKind, {name: string; list: (settings: ReachSettings) => readonly string[]; what: string}>> = {
  'local-path': {list: (settings) => settings.allowedModelDirs, name: ALLOWED_MODEL_DIRS_SETTING, what: 'its folder'},
  'pip-source': {list: (settings) => settings.allowedPipSources, name: ALLOWED_PIP_SOURCES_SETTING, what: 'its source'},
  'python-module': {list: (settings) => settings.allowedPythonModules, name: ALLOWED_PYTHON_MODULES_SETTING, what: 'the module'},
}

/**
 * Refuses (403, naming the field and the permission or setting) the first item the caller may not ask for. The
 * answer depends only on the field and the caller, never on what is on the machine. Paths inside
 * SERVICE_ALLOWED_MODEL_DIRS pass here; the path checks confine them to those folders.
 */
export function checkReach(items: readonly ReachItem[], authority: Authority, settings: ReachSettings): void {
  const who = authority.username === null ? 'this caller' : `user "${authority.username}"`
  for (const item of items) {
    if (item.kind === 'python-module' && !PYTHON_MODULE.test(item.value))
      throw new ServiceError(400, 'invalid_request', `${item.field} must be a Python module name such as "my_models.classifier".`, item.field)
    const setting = SETTING[item.kind]
    const list = setting?.list(settings) ?? []
    if (list.length > 0) {
      if (item.kind === 'local-path' || listed(item, settings)) continue
      throw new ServiceError(403, 'forbidden', `${item.field} ${WHAT[item.kind]}, and ${setting!.name} does not allow it (it allows ${list.join(', ')}); ask the operator to add ${setting!.what} there.`, item.field)
    }

    if (authority.admin) continue
    const otherwise = setting ? `, or ${setting.what} listed in ${setting.name} by the operator` : ''
    throw new ServiceError(
      403,
      'forbidden',
      `${item.field} ${WHAT[item.kind]}, which needs the admin permission${otherwise}; ${who} does not have it. Ask an administrator to register or launch it.`,
      item.field,
    )
  }
}
