/**
 * Models whose weights are a whole hub repository rather than one named file: the safetensors (`pytorch`), AWQ, GPTQ,
 * FP8 and MLX specs, which name a `model_id` and no file template. Their cache entry is the repository's folder as
 * Python engines load it (`config.json`, the tokenizer's files, the weight shards), downloaded file by file through
 * the same transfers as a GGUF file.
 *
 * Which files: every file at the top of the repository except weights in other formats (a repo often carries the
 * same weights as `pytorch_model.bin`, ONNX or GGUF too); of the safetensors files, only the shards the index
 * (`model.safetensors.index.json`) maps, as some repos also keep a consolidated copy beside the shards. Folders
 * (`original/`, `onnx/`) hold other packagings and are left out. A repo without any safetensors is taken with its
 * `.bin` weights, which the engines load as well.
 */
import {readFile} from 'node:fs/promises'

import type {ResolvedSpec} from '../kernel/catalogue.js'
import type {RemoteFile, RepoSnapshot} from './hubs.js'

import {GENERATED_HUB, specFileNames} from '../kernel/catalogue.js'
import {ServiceError} from '../kernel/errors.js'
import {isGgufFormat} from '../kernel/model-files.js'

export const SAFETENSORS_INDEX = 'model.safetensors.index.json'

/** Weight files of other packagings, never needed beside safetensors. */
const OTHER_WEIGHTS = /\.(bin|pt|pth|ckpt|h5|msgpack|onnx|ot|gguf|tflite)$/i
const NEVER = new Set(['.gitattributes'])

/** A spec downloaded as a whole repository: a hub model_id, no file names, and not GGUF (whose files are always named). */
export function isRepositorySpec(spec: ResolvedSpec): boolean {
  return !spec.model_uri && spec.model_hub !== GENERATED_HUB && !!spec.model_id && !isGgufFormat(spec.model_format) && specFileNames(spec).length === 0
}

/** The shards `model.safetensors.index.json` (or the index `name`) maps tensors to, or a 502 naming the repo when it cannot be read. */
export async function indexedShards(indexPath: string, repo: string, name = SAFETENSORS_INDEX): Promise<Set<string>> {
  try {
    const index = JSON.parse(await readFile(indexPath, 'utf8')) as {weight_map?: Record<string, unknown>}
    const shards = Object.values(index.weight_map ?? {}).filter((value): value is string => typeof value === 'string')
    if (shards.length > 0) return new Set(shards)
  } catch {
    // Reported below, as an index without shards is.
  }

  throw new ServiceError(502, 'hub_error', `the repo ${repo} has a ${name} that maps no weight files; it cannot be loaded.`)
}

/**
 * The files of the repository a launch needs, in the order they are fetched: the small files first (so that an
 * unusable repo fails before the weights download), then the weights. `shards` are the index's, when it has one.
 */
export function repositoryFiles(snapshot: RepoSnapshot, shards?: Set<string>): RemoteFile[] {
  const top = [...snapshot.files.values()].filter((file) => !file.path.includes('/') && !NEVER.has(file.path))
  const safetensors = top.filter((file) => file.path.endsWith('.safetensors'))
  const weights = shards ? safetensors.filter((file) => shards.has(file.path)) : safetensors.length > 0 ? safetensors : top.filter((file) => /\.bin$/i.test(file.path))
  if (shards && weights.length < shards.size) {
    const missing = [...shards].filter((shard) => !snapshot.files.has(shard))
    throw new ServiceError(502, 'hub_not_found', `the repo ${snapshot.repo} at ${snapshot.revision} lacks weight files its ${SAFETENSORS_INDEX} names: ${missing.slice(0, 5).join(', ')}.`)
  }

  if (weights.length === 0)
    throw new ServiceError(502, 'hub_not_found', `the repo ${snapshot.repo} at ${snapshot.revision} has no safetensors (or .bin) weights at its top level; check model_id and model_revision.`)
  const others = top.filter((file) => !file.path.endsWith('.safetensors') && !OTHER_WEIGHTS.test(file.path))
  return [...others, ...weights]
}
