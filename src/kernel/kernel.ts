/**
 * The shared kernel: registries of model types, engines, built-in catalogue entries and routes, filled from
 * plugin contributions. Each contribution is validated item by item; a bad item is reported with the plugin's
 * name and skipped, so one broken plugin never keeps the service from starting.
 */
import type {ModelFamily} from './catalogue.js'
import type {
  Contribution,
  EngineBuild,
  EngineDefinition,
  KernelApi,
  Logger,
  ModelTypeDefinition,
  RecordStore,
  RouteDefinition,
  WeightsGenerator,
} from './contracts.js'
import type {PluginContribution, PluginFailure} from './hooks.js'

import {isAbsolute, join} from 'node:path'

import {flattenFamily} from './catalogue.js'
import {commandLineFlags} from './command-line-flags.js'
import {KERNEL_API_VERSION} from './contracts.js'
import {badRequest, errorFactory, notFound, ServiceError} from './errors.js'
import {imageReader} from './image-inputs.js'
import {jsonLinesProgram} from './json-lines-program.js'
import {mediaKit} from './media-kit.js'
import {checkLocalPath} from './model-files.js'
import {openAICompatibleOperations} from './openai-upstream.js'
import {pcmSpeechOperations} from './pcm-speech-program.js'
import {AUTHENTICATED, PERMISSIONS, PUBLIC, requiredPermission} from './permissions.js'
import {recordStore, STORE_NAME} from './record-store.js'
import * as schema from './schema.js'
import {toolCallFormatOf} from './tool-call-format.js'
import {pythonRequirementsProblem} from './virtualenv.js'

export interface Registered<T> {
  plugin: string
  definition: T
}

export interface BuiltinFamily {
  plugin: string
  modelType: string
  family: ModelFamily
}

const METHODS = new Set(['DELETE', 'GET', 'POST', 'PUT'])
const NAME = /^[A-Za-z0-9][\w.-]*$/

/** What the kernel API needs of the service's settings. */
export interface KernelApiSettings {
  /** Folders files named by launch parameters must resolve into (SERVICE_ALLOWED_MODEL_DIRS); empty: anywhere. */
  allowedModelDirs?: readonly string[]
  /**
   * The service's own weights cache: files it downloaded itself (a model's companion files) are given to engines as
   * launch parameters, and pass wherever the allowed folders are.
   */
  cacheDir?: string
  /** Modules the flexible launcher may import (SERVICE_ALLOWED_PYTHON_MODULES); empty: whatever the registration names. */
  allowedPythonModules?: readonly string[]
  /** Hosts whose pictures may be fetched at private addresses (SERVICE_ALLOWED_IMAGE_HOSTS); empty: none. */
  allowedImageHosts?: readonly string[]
  /** SERVICE_HOME, where plugins' records are kept; without it they are kept in memory. */
  home?: string
}

export function createKernelApi(version: string, log: Logger, {allowedImageHosts = [], allowedModelDirs = [], allowedPythonModules = [], cacheDir, home}: KernelApiSettings = {}): KernelApi {
  const stores = new Map<string, RecordStore>()
  return {
    apiVersion: KERNEL_API_VERSION,
    errors: errorFactory,
    external: {commandLineFlags, jsonLines: jsonLinesProgram, openAICompatible: openAICompatibleOperations, pcmSpeech: pcmSpeechOperations, toolCallFormat: toolCallFormatOf},
    files: {localPath: (value, check) => checkLocalPath(value, {...check, allowedDirs: allowedModelDirs, ownDirs: cacheDir ? [cacheDir] : []})},
    images: imageReader(allowedImageHosts),
    log,
    media: mediaKit,
    policy: {allowedPythonModules},
    records(name, bounds) {
      if (!STORE_NAME.test(name)) throw new Error(`record store name ${JSON.stringify(name)} must be lower-case letters, digits and dashes`)
      let store = stores.get(name)
      if (!store) stores.set(name, (store = recordStore(home ? join(home, name) : undefined, bounds)))
      return store
    },
    requireAbility(model, ability, what) {
      if (model.abilities.includes(ability)) return
      throw badRequest(
        `model ${model.uid} (${model.modelType} ${model.modelName}) cannot ${what}; it can: ${model.abilities.join(', ') || 'nothing yet'}.`,
        'model',
      )
    },
    schema,
    version,
  }
}

export class Kernel {
  readonly modelTypes = new Map<string, Registered<ModelTypeDefinition>>()
  /** Keyed by lower-cased name: users type `llama.cpp`, `vLLM`, `vllm` interchangeably. */
  readonly engines = new Map<string, Registered<EngineDefinition>>()
  readonly builtins = new Map<string, Map<string, BuiltinFamily>>()
  readonly routes: Array<Registered<RouteDefinition>> = []
  /** Keyed by model format, lower-cased as formats are matched. */
  /** By format; several plugins may make files of one format (a pytorch LLM, a pytorch voice), each its own recipes. */
  readonly weightsGenerators = new Map<string, Array<Registered<WeightsGenerator>>>()
  /** Problems found while registering, for the log and `GET /v1/cluster/plugins`. */
  readonly problems: PluginFailure[] = []
  readonly plugins: string[] = []

  constructor(readonly api: KernelApi) {}

  static fromContributions(api: KernelApi, contributions: PluginContribution[], failures: PluginFailure[] = []): Kernel {
    const kernel = new Kernel(api)
    kernel.problems.push(...failures)
    // Model types first, so engines and catalogue entries can be checked against them whatever the plugin order.
    for (const {contribution, plugin} of contributions) kernel.registerModelTypes(plugin, contribution)
    for (const {contribution, plugin} of contributions) kernel.registerRest(plugin, contribution)
    for (const problem of kernel.problems) api.log.warn(`plugin ${problem.plugin}: ${problem.message}`)
    return kernel
  }

  modelType(name: string): Registered<ModelTypeDefinition> | undefined {
    return this.modelTypes.get(name) ?? [...this.modelTypes.values()].find((t) => t.definition.name.toLowerCase() === name.toLowerCase())
  }

  engine(name: string): Registered<EngineDefinition> | undefined {
    return this.engines.get(name.toLowerCase())
  }

  /** The generator of `format` files that knows `recipe`; else the first of that format, whose refusal names its recipes. */
  weightsGenerator(format: string, recipe: string): WeightsGenerator | undefined {
    const generators = this.weightsGenerators.get(format.toLowerCase()) ?? []
    return (generators.find(({definition}) => definition.recipes.includes(recipe)) ?? generators[0])?.definition
  }

  enginesFor(modelType: string): EngineDefinition[] {
    return [...this.engines.values()].map((e) => e.definition).filter((e) => e.modelTypes.includes(modelType))
  }

  private report(plugin: string, message: string) {
    this.problems.push({message, plugin})
  }

  private registerModelTypes(plugin: string, contribution: Contribution) {
    if (!this.plugins.includes(plugin)) this.plugins.push(plugin)
    for (const type of contribution.modelTypes ?? []) {
      if (!type || typeof type.name !== 'string' || !NAME.test(type.name)) {
        this.report(plugin, `model type ${JSON.stringify(type?.name)} has no valid name`)
      } else if (this.modelType(type.name)) {
        this.report(plugin, `model type ${type.name} is already provided by ${this.modelType(type.name)!.plugin}`)
      } else {
        this.modelTypes.set(type.name, {definition: {...type, defaultAbilities: type.defaultAbilities ?? []}, plugin})
      }
    }
  }

  private registerRest(plugin: string, contribution: Contribution) {
    for (const engine of contribution.engines ?? []) this.registerEngine(plugin, engine)
    for (const generator of contribution.weightsGenerators ?? []) this.registerWeightsGenerator(plugin, generator)
    for (const entry of contribution.catalogue ?? []) {
      if (!entry || !this.modelType(entry.modelType)) {
        this.report(plugin, `catalogue for unknown model type ${JSON.stringify(entry?.modelType)}`)
        continue
      }

      const typeName = this.modelType(entry.modelType)!.definition.name
      const families = this.builtins.get(typeName) ?? new Map<string, BuiltinFamily>()
      this.builtins.set(typeName, families)
      for (const family of entry.families ?? []) {
        const problem = familyProblem(family)
        if (problem) this.report(plugin, `catalogue entry ${JSON.stringify(family?.model_name)}: ${problem}`)
        else if (families.has(family.model_name))
          this.report(plugin, `catalogue entry ${family.model_name} is already provided by ${families.get(family.model_name)!.plugin}`)
        else families.set(family.model_name, {family, modelType: typeName, plugin})
      }
    }

    for (const route of contribution.routes ?? []) {
      const key = `${route?.method} ${route?.path}`
      if (!route || !METHODS.has(route.method) || typeof route.path !== 'string' || !route.path.startsWith('/') || typeof route.handler !== 'function') {
        this.report(plugin, `route ${key} needs a method (${[...METHODS].join(', ')}), a path starting with / and a handler`)
      } else if (route.multipart !== undefined && !isMultipart(route.multipart)) {
        this.report(plugin, `route ${key}: multipart needs maxFileBytes (a number of bytes above 0) and at least one field in files`)
      } else if (this.routes.some((r) => `${r.definition.method} ${r.definition.path}` === key)) {
        this.report(plugin, `route ${key} is already provided by ${this.routes.find((r) => `${r.definition.method} ${r.definition.path}` === key)!.plugin}`)
      } else {
        // Still registered: admin-only is safe, and the route works for administrators while the plugin is fixed.
        if (requiredPermission(route) !== route.permission)
          this.report(plugin, `route ${key} declares ${route.permission === undefined ? 'no permission' : `the unknown permission ${JSON.stringify(route.permission)}`}, so only admin may call it when access control is on; set \`permission\` to one of ${[...PERMISSIONS, PUBLIC, AUTHENTICATED].join(', ')}`)
        this.routes.push({definition: route as RouteDefinition, plugin})
      }
    }
  }

  private registerWeightsGenerator(plugin: string, generator: WeightsGenerator) {
    const valid =
      typeof generator?.format === 'string' &&
      generator.format.length > 0 &&
      Array.isArray(generator.recipes) &&
      generator.recipes.every(isNonEmptyString) &&
      typeof generator.generate === 'function'
    if (!valid) {
      this.report(plugin, `weights generator ${JSON.stringify(generator?.format)} needs a format, a list of recipe names and a generate function`)
      return
    }

    const pythonProblem = generator.python === undefined ? undefined : pythonRequirementsProblem(generator.python, true)
    if (pythonProblem) {
      this.report(plugin, `weights generator for ${generator.format}: ${pythonProblem}`)
      return
    }

    const generators = this.weightsGenerators.get(generator.format.toLowerCase()) ?? []
    const clash = generators.find(({definition}) => definition.recipes.some((recipe) => generator.recipes.includes(recipe)))
    if (clash) this.report(plugin, `weights generator for ${generator.format}: its recipes are already provided by ${clash.plugin}`)
    else this.weightsGenerators.set(generator.format.toLowerCase(), [...generators, {definition: generator, plugin}])
  }

  private registerEngine(plugin: string, engine: EngineDefinition) {
    if (!engine || typeof engine.name !== 'string' || !NAME.test(engine.name)) {
      this.report(plugin, `engine ${JSON.stringify(engine?.name)} has no valid name`)
      return
    }

    const types = Array.isArray(engine.modelTypes) ? engine.modelTypes : []
    const unknownTypes = types.filter((t) => !this.modelType(t))
    if (types.length === unknownTypes.length) {
      this.report(plugin, `engine ${engine.name} serves unknown model types: ${unknownTypes.join(', ') || '(none given)'}`)
      return
    }

    // An engine that also serves a type whose plugin is missing still runs the types that are installed.
    if (unknownTypes.length > 0)
      this.report(plugin, `engine ${engine.name} serves unknown model types: ${unknownTypes.join(', ')}; it runs only ${types.filter((t) => this.modelType(t)).join(', ')}`)

    if (!(typeof engine.hostModule === 'string' || isExternalEngine(engine.external)) || !Array.isArray(engine.formats)) {
      this.report(plugin, `engine ${engine.name} needs a hostModule path (or an external program) and a list of formats`)
      return
    }

    const environment = engine.processEnvironment ?? {}
    if (typeof environment !== 'object' || Object.values(environment).some((value) => typeof value !== 'string')) {
      this.report(plugin, `engine ${engine.name}: processEnvironment must map variable names to strings`)
      return
    }

    const pythonProblem = engine.python === undefined ? undefined : pythonRequirementsProblem(engine.python, isExternalEngine(engine.external))
    if (pythonProblem) {
      this.report(plugin, `engine ${engine.name}: ${pythonProblem}`)
      return
    }

    const existing = this.engine(engine.name)
    if (existing) {
      this.report(plugin, `engine ${engine.name} is already provided by ${existing.plugin}`)
      return
    }

    // A broken build only costs the build: the engine still runs models with what it has.
    const buildProblem = engine.build === undefined ? undefined : engineBuildProblem(engine.build)
    if (buildProblem) this.report(plugin, `engine ${engine.name}: its build is ignored: ${buildProblem}`)

    const definition = {...engine, modelTypes: types.filter((t) => this.modelType(t)), parameters: engine.parameters ?? {}}
    if (buildProblem) delete definition.build
    this.engines.set(engine.name.toLowerCase(), {definition, plugin})
  }
}

const isExternalEngine = (value: EngineDefinition['external']) =>
  typeof value?.command === 'function' && typeof value.health?.path === 'string' && typeof value.operations === 'object'

const isMultipart = (value: RouteDefinition['multipart']) =>
  typeof value?.maxFileBytes === 'number' && value.maxFileBytes > 0 && typeof value.files === 'object' && Object.keys(value.files ?? {}).length > 0

const isNonEmptyString = (value: unknown): value is string => typeof value === 'string' && value.length > 0
const isCommand = (value: unknown) => Array.isArray(value) && value.length > 0 && value.every(isNonEmptyString)
/** Looked up on PATH, so a bare name: `cmake`, not `/usr/bin/cmake`. */
const isProgramName = (value: unknown) => isNonEmptyString(value) && !value.includes('/')

/** Why an engine's `build` cannot be used, or undefined if it can. */
export function engineBuildProblem(build: EngineBuild): string | undefined {
  if (typeof build !== 'object' || build === null) return 'build must be an object with a description and a command'
  if (!isNonEmptyString(build.description)) return 'build.description must be a non-empty string'
  if (!isCommand(build.command)) return 'build.command must be a non-empty list of strings: the program, then its arguments'
  if (build.reportCommand !== undefined && !isCommand(build.reportCommand))
    return 'build.reportCommand must be a non-empty list of strings: the program, then its arguments'
  if (build.auto !== undefined && !(isCommand(build.auto?.probeCommand) && isAbsolute(String(build.auto?.folder))))
    return 'build.auto must be {folder, probeCommand}: the absolute folder the build writes into, and the probe as a non-empty list of strings'
  if (build.requires === undefined) return undefined
  if (!Array.isArray(build.requires)) return 'build.requires must be a list of requirements'
  for (const [index, requirement] of build.requires.entries()) {
    const valid =
      typeof requirement === 'object' &&
      requirement !== null &&
      isNonEmptyString(requirement.name) &&
      Array.isArray(requirement.programs) &&
      requirement.programs.length > 0 &&
      requirement.programs.every(isProgramName) &&
      (requirement.aptPackage === undefined || isNonEmptyString(requirement.aptPackage))
    if (!valid)
      return `build.requires[${index}] needs a name and a non-empty list of programs (names looked up on PATH, without a directory), and optionally an aptPackage`
  }

  return undefined
}

/** Why a family cannot be registered, or undefined if it can. */
export function familyProblem(family: ModelFamily): string | undefined {
  if (typeof family !== 'object' || family === null) return 'it is not a JSON object'
  if (typeof family.model_name !== 'string' || !NAME.test(family.model_name))
    return 'model_name must be letters, digits, ".", "_" or "-", starting with a letter or digit'
  if (!Array.isArray(family.model_specs) || family.model_specs.length === 0) return 'model_specs must be a non-empty array'
  try {
    const specs = flattenFamily(family)
    const badFormat = specs.find((spec) => typeof spec.model_format !== 'string')
    if (badFormat) return 'every spec needs a model_format'
  } catch (error) {
    return (error as Error).message
  }

  return undefined
}
