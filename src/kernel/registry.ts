/**
 * The catalogue as users see it: built-in families from plugins plus custom registrations, which persist as
 * one JSON file per model under `SERVICE_HOME/registrations/<type>/<name>.json`. Files are written to a
 * temporary name and renamed, so a crash never leaves half a registration; a file that cannot be read or
 * validated at start is reported and skipped, never fatal.
 *
 * Registering and unregistering one name happen one at a time, and each changes the disk before memory, so
 * the listing and the files always agree and a restart brings back exactly what was listed.
 */
import AsyncLock from 'async-lock'
import {existsSync} from 'node:fs'
import {mkdir, readdir, readFile, rm} from 'node:fs/promises'
import {join} from 'node:path'
import writeFileAtomic from 'write-file-atomic'

import type {ModelFamily} from './catalogue.js'
import type {Logger} from './contracts.js'
import type {Kernel} from './kernel.js'

import {parseFamily} from './catalogue.js'
import {validateCompanionFiles} from './companions.js'
import {badRequest, notFound, ServiceError} from './errors.js'
import {familyProblem} from './kernel.js'
import {checkLocalPath, checkModelUri} from './model-files.js'
import {type Authority, checkReach, NO_AUTHORITY, registrationReach, SERVICE_AUTHORITY} from './reach.js'
import {MAX_REGISTRATIONS_SETTING} from './settings.js'
import {checkVirtualEnv} from './virtualenv.js'
import {PRIVATE_FILE, PRIVATE_FOLDER} from './private-home.js'

export interface CatalogueEntry {
  modelType: string
  family: ModelFamily
  builtin: boolean
}

export interface RegistryOptions {
  /** Folders a `file://` model_uri must resolve into (SERVICE_ALLOWED_MODEL_DIRS); empty: anywhere. */
  allowedModelDirs?: readonly string[]
  /** Python modules registrations may name (SERVICE_ALLOWED_PYTHON_MODULES); empty: admins decide. */
  allowedPythonModules?: readonly string[]
  /** Where virtual environments may install from beyond plain names (SERVICE_ALLOWED_PIP_SOURCES); empty: admins decide. */
  allowedPipSources?: readonly string[]
  /** Registrations a user without admin may have at once; unlimited when absent. */
  maxRegistrationsPerUser?: number
}

export interface RegisterOptions {
  /** Who registers: what the registration may run and read, and whose quota it counts against. No one's when absent. */
  authority?: Authority
  /** Keep it across restarts (default true). */
  persist?: boolean
}

/** Beside `<name>.json`, the user who registered it, so that the quota counts the same after a restart. */
const OWNER_SUFFIX = '.owner'

export class ModelRegistry {
  private readonly custom = new Map<string, Map<string, ModelFamily>>()
  /** The user who registered each custom model, by name (names are unique across types); none for the service's own. */
  private readonly owners = new Map<string, string>()
  /** Keyed by model name, which is unique across types; every HTTP request waiting on a name is one entry. */
  private readonly names = new AsyncLock({maxPending: Number.POSITIVE_INFINITY})
  readonly problems: string[] = []

  constructor(
    private readonly kernel: Kernel,
    private readonly directory: string,
    private readonly log: Logger,
    private readonly options: RegistryOptions = {},
  ) {}

  /** Reads every persisted registration; returns how many were loaded. */
  async load(): Promise<number> {
    let loaded = 0
    const types = existsSync(this.directory) ? await readdir(this.directory, {withFileTypes: true}) : []
    for (const typeDir of types.filter((entry) => entry.isDirectory())) {
      for (const file of await readdir(join(this.directory, typeDir.name))) {
        if (!file.endsWith('.json')) continue
        const path = join(this.directory, typeDir.name, file)
        try {
          const family = this.normalize(typeDir.name, parseFamily(await readFile(path, 'utf8'), 'the file'))
          // Checked as the service's own: the allow-lists set since it was registered apply to it too.
          await this.validate(typeDir.name, family, SERVICE_AUTHORITY)
          this.checkConflicts(family)
          this.customOf(this.typeName(typeDir.name)).set(family.model_name, family)
          const owner = await readFile(path.replace(/\.json$/, OWNER_SUFFIX), 'utf8').catch(() => '')
          if (owner) this.owners.set(family.model_name, owner)
          loaded++
        } catch (error) {
          const message = `skipped registration ${path}: ${(error as Error).message}`
          this.problems.push(message)
          this.log.warn(message)
        }
      }
    }

    return loaded
  }

  list(modelType: string): Array<{model_name: string; is_builtin: boolean; family: ModelFamily}> {
    const type = this.typeName(modelType)
    const builtin = [...(this.kernel.builtins.get(type)?.values() ?? [])].map((b) => ({family: b.family, is_builtin: true, model_name: b.family.model_name}))
    const custom = [...this.customOf(type).values()].map((family) => ({family, is_builtin: false, model_name: family.model_name}))
    return [...builtin, ...custom].sort((a, b) => a.model_name.localeCompare(b.model_name))
  }

  get(modelType: string, name: string): CatalogueEntry {
    const type = this.typeName(modelType)
    const builtin = this.kernel.builtins.get(type)?.get(name)
    if (builtin) return {builtin: true, family: builtin.family, modelType: type}
    const custom = this.customOf(type).get(name)
    if (custom) return {builtin: false, family: custom, modelType: type}
    throw notFound(`no ${type} model named "${name}" is registered; \`servicectl registrations -t ${type}\` lists them.`, 'registration_not_found')
  }

  /** Finds a model by name across all types (or in one type when given). */
  find(name: string, modelType?: string): CatalogueEntry {
    if (modelType) return this.get(modelType, name)
    for (const type of this.kernel.modelTypes.keys()) {
      try {
        return this.get(type, name)
      } catch {}
    }

    throw new ServiceError(
      400,
      'registration_not_found',
      `model_name "${name}" is not in the catalogue; \`servicectl registrations\` lists the models you can launch, or register your own with \`servicectl register\`.`,
      'model_name',
    )
  }

  async register(modelType: string, submitted: ModelFamily, {authority = NO_AUTHORITY, persist = true}: RegisterOptions = {}): Promise<void> {
    const type = this.typeName(modelType)
    const family = this.normalize(type, submitted)
    this.checkQuota(authority)
    await this.validate(type, family, authority)
    const owner = authority.admin ? undefined : (authority.username ?? undefined)
    await this.names.acquire(family.model_name, async () => {
      this.checkConflicts(family)
      // Again under the name's lock, which a burst of registrations of different names does not share.
      this.checkQuota(authority)
      // Counted at once, before the writes, so that registrations of other names waiting on the disk count it too.
      if (owner) this.owners.set(family.model_name, owner)
      try {
        if (persist) {
          await mkdir(join(this.directory, type), {mode: PRIVATE_FOLDER, recursive: true})
          if (owner) await writeFileAtomic(this.fileOf(type, family.model_name, OWNER_SUFFIX), owner, {mode: PRIVATE_FILE})
          // A registration may hold a hub token or an index URL with a password in it: readable by the service's user only.
          await writeFileAtomic(this.fileOf(type, family.model_name), JSON.stringify(family, null, 2) + '\n', {mode: PRIVATE_FILE})
        }
      } catch (error) {
        this.owners.delete(family.model_name)
        throw error
      }

      this.customOf(type).set(family.model_name, family)
    })
  }

  /** A user without admin may hold only so many registrations: each is a file on disk and an entry every listing reads. */
  private checkQuota(authority: Authority) {
    const limit = this.options.maxRegistrationsPerUser
    if (authority.admin || limit === undefined) return
    const held = [...this.owners.values()].filter((owner) => owner === authority.username).length
    if (held < limit) return
    const who = authority.username === null ? 'this caller' : `user "${authority.username}"`
    throw new ServiceError(
      403,
      'quota_exceeded',
      `${who} already has ${held} registrations, the most a user without the admin permission may have (${MAX_REGISTRATIONS_SETTING}=${limit}); unregister some, or ask the operator to raise ${MAX_REGISTRATIONS_SETTING} (max_registrations_per_user in the config file).`,
    )
  }

  async unregister(modelType: string, name: string): Promise<void> {
    const type = this.typeName(modelType)
    if (this.kernel.builtins.get(type)?.has(name))
      throw badRequest(`${name} is a built-in model and cannot be unregistered.`, 'model_name')
    await this.names.acquire(name, async () => {
      if (!this.customOf(type).has(name))
        throw notFound(`no custom ${type} model named "${name}" is registered.`, 'registration_not_found')
      await rm(this.fileOf(type, name), {force: true})
      await rm(this.fileOf(type, name, OWNER_SUFFIX), {force: true})
      this.customOf(type).delete(name)
      this.owners.delete(name)
    })
  }

  private fileOf(type: string, name: string, suffix = '.json'): string {
    return join(this.directory, type, `${name}${suffix}`)
  }

  private typeName(modelType: string): string {
    const type = this.kernel.modelType(modelType)
    if (!type)
      throw badRequest(
        `model type "${modelType}" is not known; installed types: ${[...this.kernel.modelTypes.keys()].join(', ')}.`,
        'model_type',
      )
    return type.definition.name
  }

  private customOf(type: string): Map<string, ModelFamily> {
    let map = this.custom.get(type)
    if (!map) this.custom.set(type, (map = new Map()))
    return map
  }

  private normalize(modelType: string, family: ModelFamily): ModelFamily {
    const normalizeFamily = this.kernel.modelType(modelType)?.definition.normalizeFamily
    return normalizeFamily && typeof family === 'object' && family !== null ? normalizeFamily(family) : family
  }

  private async validate(modelType: string, family: ModelFamily, authority: Authority): Promise<void> {
    const type = this.kernel.modelType(modelType)
    if (!type) throw badRequest(`model type "${modelType}" is not known.`, 'model_type')
    const problem = familyProblem(family)
    if (problem) throw badRequest(`the registration is invalid: ${problem}.`, 'model')
    type.definition.validateFamily?.(family)
    checkVirtualEnv(family.virtualenv)
    // Before any path is looked at, so that a caller who may not name paths learns nothing about them.
    const {allowedModelDirs = [], allowedPipSources = [], allowedPythonModules = []} = this.options
    checkReach(registrationReach(family), authority, {allowedModelDirs, allowedPipSources, allowedPythonModules})
    const launcherPath = (family.launcher_args as {path?: unknown} | undefined)?.path
    if (launcherPath !== undefined && launcherPath !== null) await checkLocalPath(launcherPath, {allowedDirs: allowedModelDirs, kind: 'folder', param: 'launcher_args.path'})
    for (const [index, spec] of family.model_specs!.entries()) {
      const uris: Array<[string, unknown]> = [[`model_specs[${index}].model_uri`, spec.model_uri]]
      validateCompanionFiles(spec.companion_files, `model_specs[${index}].companion_files`)
      for (const [hub, source] of Object.entries(spec.model_src ?? {})) {
        uris.push([`model_specs[${index}].model_src.${hub}.model_uri`, source?.model_uri])
        validateCompanionFiles(source?.companion_files, `model_specs[${index}].model_src.${hub}.companion_files`)
      }

      for (const [param, uri] of uris) {
        if (uri === undefined || uri === null) continue
        if (typeof uri !== 'string') throw badRequest(`${param} must be a file:// URI (a string).`, param)
        await checkModelUri(uri, {allowedDirs: this.options.allowedModelDirs, format: spec.model_format, param})
      }
    }
  }

  private checkConflicts(family: ModelFamily) {
    for (const [otherType, families] of this.kernel.builtins) {
      if (families.has(family.model_name))
        throw badRequest(`model name ${family.model_name} conflicts with the built-in ${otherType} model of that name; choose another model_name.`, 'model_name')
    }

    for (const [otherType, families] of this.custom) {
      if (families.has(family.model_name))
        throw badRequest(`model ${family.model_name} is already registered (${otherType}); unregister it first or choose another model_name.`, 'model_name')
    }
  }
}
