/**
 * The catalogue as users see it: built-in families from plugins plus custom registrations, which persist as
 * one JSON file per model under `SERVICE_HOME/registrations/<type>/<name>.json`. Files are written to a
 * temporary name and renamed, so a crash never leaves half a registration; a file that cannot be read or
 * validated at start is reported and skipped, never fatal.
 */
import {existsSync} from 'node:fs'
import {mkdir, readdir, readFile, rename, rm, writeFile} from 'node:fs/promises'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'

import type {ModelFamily} from './catalogue.js'
import type {Logger} from './contracts.js'
import type {Kernel} from './kernel.js'

import {flattenFamily} from './catalogue.js'
import {badRequest, notFound, ServiceError} from './errors.js'
import {familyProblem} from './kernel.js'

export interface CatalogueEntry {
  modelType: string
  family: ModelFamily
  builtin: boolean
}

export class ModelRegistry {
  private readonly custom = new Map<string, Map<string, ModelFamily>>()
  readonly problems: string[] = []

  constructor(
    private readonly kernel: Kernel,
    private readonly directory: string,
    private readonly log: Logger,
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
          const family = JSON.parse(await readFile(path, 'utf8')) as ModelFamily
          this.validate(typeDir.name, family, {checkConflicts: true})
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

  async register(modelType: string, family: ModelFamily, persist = true): Promise<void> {
    const type = this.typeName(modelType)
    this.validate(type, family, {checkConflicts: true})
    if (persist) {
      const dir = join(this.directory, type)
      await mkdir(dir, {recursive: true})
      const target = join(dir, `${family.model_name}.json`)
      const temporary = `${target}.${process.pid}.tmp`
      await writeFile(temporary, JSON.stringify(family, null, 2) + '\n')
      await rename(temporary, target)
    }

    this.customOf(type).set(family.model_name, family)
  }

  async unregister(modelType: string, name: string): Promise<void> {
    const type = this.typeName(modelType)
    if (this.kernel.builtins.get(type)?.has(name))
      throw badRequest(`${name} is a built-in model and cannot be unregistered.`, 'model_name')
    if (!this.customOf(type).has(name))
      throw notFound(`no custom ${type} model named "${name}" is registered.`, 'registration_not_found')
    await rm(join(this.directory, type, `${name}.json`), {force: true})
    this.customOf(type).delete(name)
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

  private validate(modelType: string, family: ModelFamily, {checkConflicts}: {checkConflicts: boolean}) {
    const type = this.kernel.modelType(modelType)
    if (!type) throw badRequest(`model type "${modelType}" is not known.`, 'model_type')
    const problem = familyProblem(family)
    if (problem) throw badRequest(`the registration is invalid: ${problem}.`, 'model')
    type.definition.validateFamily?.(family)
    for (const spec of flattenFamily(family)) {
      if (!spec.model_uri) continue
      if (!spec.model_uri.startsWith('file://'))
        throw badRequest(`model_uri "${spec.model_uri}" must be a file:// URI of a file on this machine.`, 'model_uri')
      let path: string
      try {
        path = fileURLToPath(spec.model_uri)
      } catch {
        throw badRequest(`model_uri "${spec.model_uri}" is not a valid file:// URI (use an absolute path: file:///abs/path/model.gguf).`, 'model_uri')
      }

      if (!existsSync(path)) throw badRequest(`model_uri ${spec.model_uri} points to ${path}, which does not exist.`, 'model_uri')
    }

    if (!checkConflicts) return
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
