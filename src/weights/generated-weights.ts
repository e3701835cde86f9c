/**
 * Weights made on this machine (catalogue specs whose hub is `generated`, such as `tiny-random-llm`) by the generator an
 * engine plugin contributes for the spec's format. They go into the model cache like downloaded weights: each file is
 * written under a temporary name and renamed into place once the generator has finished, and the manifest comes last,
 * so a crash or a cancel never leaves a half-made model that a later launch would load.
 */
import {createHash} from 'node:crypto'
import {createReadStream} from 'node:fs'
import {mkdir, rename, rm, stat} from 'node:fs/promises'
import {dirname} from 'node:path'

import type {ResolvedSpec} from '../kernel/catalogue.js'
import type {Logger, WeightsGenerator} from '../kernel/contracts.js'
import type {PythonEnvironment, PythonRequirements} from '../kernel/virtualenv.js'
import type {CacheManifest, ModelCache} from './cache.js'

import {GENERATED_HUB} from '../kernel/catalogue.js'
import {ServiceError} from '../kernel/errors.js'
import {formatBytes} from '../util/format.js'

/** Makes or reuses the virtual environment of a generator that runs Python (`WeightsGenerator.python`). */
export type PythonEnvironmentMaker = (requirements: PythonRequirements, signal: AbortSignal) => Promise<PythonEnvironment>

export interface GenerationJob {
  cache: ModelCache
  /** The installed generator for the spec's format, if any. */
  generator: WeightsGenerator | undefined
  log: Logger
  modelName: string
  spec: ResolvedSpec
  /** The cache entry (model version) and the names of its files. */
  version: string
  names: string[]
  signal: AbortSignal
  /** Makes the virtual environment of a generator that runs Python. */
  python?: PythonEnvironmentMaker
}

/** A temporary name the cache listing skips (it ends in `.tmp`); one per file, as one service owns its cache. */
const temporaryPath = (path: string) => `${path}.generating.tmp`

async function sha256(path: string): Promise<string> {
  const hash = createHash('sha256')
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer)
  return hash.digest('hex')
}

/** The generator that can make this spec, or a 400 saying which plugin is missing. */
function generatorFor({generator, modelName, spec}: Pick<GenerationJob, 'generator' | 'modelName' | 'spec'>): WeightsGenerator {
  const recipe = spec.model_id ?? ''
  if (!generator)
    throw new ServiceError(400, 'unsupported', `the weights of ${modelName} are made on this machine, but no installed plugin makes ${spec.model_format} files; install the engine plugin that runs ${spec.model_format} models.`, 'model_name')
  if (!generator.recipes.includes(recipe))
    throw new ServiceError(400, 'unsupported', `the weights of ${modelName} are made on this machine from the recipe "${recipe}" (model_id), which the ${spec.model_format} generator does not know; it makes: ${generator.recipes.join(', ')}.`, 'model_name')
  return generator
}

/** The environment a generator's Python runs in; a worker that cannot make one refuses the generated spec. */
function pythonFor({modelName, python, signal, spec}: GenerationJob, requirements: PythonRequirements): Promise<PythonEnvironment> {
  if (!python) throw new ServiceError(400, 'unsupported', `the ${spec.model_format} weights of ${modelName} are made with Python, and this worker cannot make Python environments.`, 'model_name')
  return python(requirements, signal)
}

export async function generateIntoCache(job: GenerationJob): Promise<void> {
  const {cache, log, modelName, names, signal, spec, version} = job
  const generator = generatorFor(job)
  const recipe = spec.model_id!
  const targets = names.map((name) => cache.filePath(version, name))
  const temporaries = targets.map((path) => temporaryPath(path))
  const started = performance.now()
  try {
    for (const path of targets) await mkdir(dirname(path), {recursive: true})
    const python = generator.python ? await pythonFor(job, generator.python) : undefined
    await generator.generate({files: temporaries, recipe, signal, ...(python ? {python} : {})})
    signal.throwIfAborted()
    const files: CacheManifest['files'] = []
    for (const [index, temporary] of temporaries.entries()) {
      const info = await stat(temporary).catch(() => undefined)
      if (!info?.isFile()) throw new ServiceError(500, 'generation_failed', `the ${spec.model_format} generator wrote no ${names[index]} for ${modelName} (recipe ${recipe}).`)
      files.push({name: names[index], sha256: await sha256(temporary), size: info.size, url: `${GENERATED_HUB}:${recipe}`})
    }

    for (const [index, temporary] of temporaries.entries()) await rename(temporary, targets[index])
    await cache.writeManifest({
      commit: null,
      downloaded_at: new Date().toISOString(),
      files,
      hub: GENERATED_HUB,
      model_format: spec.model_format,
      model_name: modelName,
      model_size_in_billions: spec.model_size_in_billions,
      model_version: version,
      quantization: spec.quantization,
      repo: recipe,
      revision: spec.model_revision ?? 'none',
    })
    const bytes = files.reduce((sum, file) => sum + file.size, 0)
    log.info(`generated ${modelName} (${version}) from the recipe ${recipe}: ${formatBytes(bytes)} in ${Math.round(performance.now() - started)} ms`)
  } catch (error) {
    await Promise.all(temporaries.map((path) => rm(path, {force: true})))
    await cache.discard(version, names)
    throw error
  }
}
