/**
 * Where a spec's weights live on this worker: a local file named by `model_uri`, or the entry in the cache
 * under `SERVICE_HOME/cache`, named so that a person can tell model, size, format and quantization apart.
 */
import {existsSync} from 'node:fs'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'

import type {ResolvedSpec} from '../kernel/catalogue.js'
import type {ResolveWeights} from './worker.js'

import {NO_SIZE, specFileNames} from '../kernel/catalogue.js'
import {badRequest, ServiceError} from '../kernel/errors.js'

/**
 * `qwen2.5-instruct--0_5B--ggufv2--q4_0`, the same model-version naming Xinference uses; models without a size
 * (embedding, rerank) leave that part out: `bge-small-en-v1.5--ggufv2--q8_0`.
 */
export function cacheEntryName(modelName: string, spec: ResolvedSpec): string {
  const size = spec.model_size_in_billions === NO_SIZE ? '' : `--${spec.model_size_in_billions}B`
  return `${modelName}${size}--${spec.model_format}--${spec.quantization}`
}

export function createWeightsResolver(cacheDir: string): ResolveWeights {
  return async ({modelName, spec}) => {
    if (spec.model_uri) {
      const path = fileURLToPath(spec.model_uri)
      if (!existsSync(path)) throw badRequest(`the weights of ${modelName} should be at ${path} (model_uri), but that file does not exist.`, 'model_uri')
      return path
    }

    const [entryFile] = specFileNames(spec)
    if (!entryFile) throw badRequest(`${modelName} names no weight file for ${spec.quantization}; its registration needs model_file_name_template or model_uri.`, 'model_name')
    const cached = join(cacheDir, cacheEntryName(modelName, spec), entryFile)
    if (existsSync(cached)) return cached
    throw new ServiceError(
      501,
      'unsupported',
      `the weights of ${modelName} (${spec.model_hub}: ${spec.model_id}/${entryFile}) are not in the cache at ${cached}, and this version cannot download from model hubs yet. Place the file there, or register the GGUF as a custom model with a file:// model_uri.`,
    )
  }
}
