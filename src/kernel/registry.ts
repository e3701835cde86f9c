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
import {checkModelUri} from './model-files.js'
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
}

export class ModelRegistry {
  private readonly custom = new Map<string, Map<string, ModelFamily>>()
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
          await this.validate(typeDir.name, family)
          this.checkConflicts(family)
          this.customOf(this.typeName(typeDir.name)).set(family.model_name, family)
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

  async register(modelType: string, submitted: ModelFamily, persist = true): Promise<void> {
    const type = this.typeName(modelType)
    const family = this.normalize(type, submitted)
    await this.validate(type, family)
    await this.names.acquire(family.model_name, async () => {
      this.checkConflicts(family)
      if (persist) {
        await mkdir(join(this.directory, type), {mode: PRIVATE_FOLDER, recursive: true})
        // A registration may hold a hub token or an index URL with a password in it: readable by the service's user only.
        await writeFileAtomic(this.fileOf(type, family.model_name), JSON.stringify(family, null, 2) + '\n', {mode: PRIVATE_FILE})
      }

      this.customOf(type).set(family.model_name, family)
    })
  }

  async unregister(modelType: string, name: string): Promise<void> {
    const type = this.typeName(modelType)
    if (this.kernel.builtins.get(type)?.has(name))
      throw badRequest(`${name} is a built-in model and cannot be unregistered.`, 'model_name')
    await this.names.acquire(name, async () => {
      if (!this.customOf(type).has(name))
        throw notFound(`no custom ${type} model named "${name}" is registered.`, 'registration_not_found')
      await rm(this.fileOf(type, name), {force: true})
      this.customOf(type).delete(name)
    })
  }

  private fileOf(type: string, name: string): string {
    return join(this.directory, type, `${name}.json`)
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

  private async validate(modelType: string, family: ModelFamily): Promise<void> {
    const type = this.kernel.modelType(modelType)
    if (!type) throw badRequest(`model type "${modelType}" is not known.`, 'model_type')
    const problem = familyProblem(family)
    if (problem) throw badRequest(`the registration is invalid: ${problem}.`, 'model')
    type.definition.validateFamily?.(family)
    checkVirtualEnv(family.virtualenv)
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
