/**
 * Diffusers pipeline repositories (the image and video specs of format `diffusers`): `model_index.json` at the top
 * names the pipeline's components, each in a folder of its own (`unet/`, `vae/`, `text_encoder/`, `tokenizer/`,
 * `scheduler/`, `transformer/` …). What is downloaded is what `DiffusionPipeline.from_pretrained` loads, by diffusers'
 * own rules (pipeline_loading_utils: `_get_ignore_patterns`, `variant_compatible_siblings`):
 *
 * - `model_index.json`, and the top-level `config.json`/`scheduler_config.json` when there are;
 * - for a component without weights (scheduler, tokenizer, feature extractor), every file of its folder;
 * - for a model component, its `config.json` and ONE packaging of its weights: safetensors over `.bin`, the variant
 *   asked for (`diffusion_pytorch_model.fp16.safetensors`, `model.fp16-00001-of-00002.safetensors`) where the
 *   component has it and the plain files where it has not, as diffusers does, and for sharded weights the index and
 *   the shards it names.
 *
 * Nothing else: not the single-file checkpoints at the top (`*.ckpt`, `sd_xl_base_1.0.safetensors`), nor ONNX, Flax
 * or OpenVINO packagings, nor folders `model_index.json` does not name (diffusers itself also takes the weights of
 * such a folder when their names are the standard ones, SDXL's unused `vae_1_0/`; we do not).
 */
import {readFile} from 'node:fs/promises'

import type {ModelFamily, ResolvedSpec} from '../kernel/catalogue.js'
import type {RemoteFile, RepoSnapshot} from './hubs.js'

import {ServiceError} from '../kernel/errors.js'
import {indexedShards} from './repository.js'

export const PIPELINE_INDEX = 'model_index.json'
const TOP_LEVEL = [PIPELINE_INDEX, 'config.json', 'scheduler_config.json']

/** The packaging variant to take: `required` when the registration names it (diffusers' `variant`), else a preference. */
export interface PipelineVariant {
  name: string
  required: boolean
}

/** A component model_index.json names: `"unet": ["diffusers", "UNet2DConditionModel"]`; `[null, null]` is none. */
interface Component {
  name: string
  className: string
}

/** Classes that hold no weights: schedulers, tokenizers, image processors, guiders. */
const WITHOUT_WEIGHTS = /Scheduler|Tokenizer|Processor|FeatureExtractor|Guidance|Guider/

const PREFIX = '(diffusion_pytorch_model|model|pytorch_model)'
const SHARD = '\\d{5}-of-\\d{5}'
const escape = (text: string) => text.replaceAll(/[.*+?^${}()|[\]\\]/g, '\\$&')

export const isPipelineSpec = (spec: ResolvedSpec) => spec.model_format === 'diffusers'

/**
 * The variant a family's `default_model_config` asks for: its `variant` (Xinference passes it to from_pretrained), or
 * `fp16` when it loads the weights as `torch_dtype: float16`, taken where the repository has fp16 files.
 */
export function pipelineVariant(family?: ModelFamily): PipelineVariant | undefined {
  const config = (family?.default_model_config ?? {}) as {variant?: unknown; torch_dtype?: unknown}
  if (typeof config.variant === 'string' && config.variant) return {name: config.variant, required: true}
  return config.torch_dtype === 'float16' ? {name: 'fp16', required: false} : undefined
}

/** The weight files of one packaging in a component's folder (names without the folder), the shard index first. */
function packaging(names: string[], extension: 'safetensors' | 'bin', variant?: string): string[] {
  const patterns = variant
    ? [`${PREFIX}\\.(${escape(variant)}|${escape(variant)}-${SHARD})\\.${extension}`, `${PREFIX}\\.${extension}\\.index\\.${escape(variant)}\\.json`, `.*-${SHARD}\\.${escape(variant)}\\.${extension}`, `${PREFIX}\\.${extension}\\.${escape(variant)}\\.index\\.json`]
    : [`${PREFIX}(-${SHARD})?\\.${extension}`, `${PREFIX}\\.${extension}\\.index\\.json`]
  const matching = new RegExp(`^(${patterns.join('|')})$`)
  const files = names.filter((name) => matching.test(name))
  return files.some((name) => !name.endsWith('.json')) ? files.sort((a, b) => Number(b.endsWith('.json')) - Number(a.endsWith('.json'))) : []
}

function componentsOf(index: Record<string, unknown>, repo: string): Component[] {
  if (typeof index !== 'object' || index === null || Array.isArray(index) || !('_class_name' in index))
    throw new ServiceError(502, 'hub_error', `the repo ${repo} has a ${PIPELINE_INDEX} that is not a diffusers pipeline's (no _class_name); check model_id.`)
  return Object.entries(index)
    .filter(([name, value]) => name !== '_class_name' && Array.isArray(value) && typeof value[0] === 'string' && typeof value[1] === 'string')
    .map(([name, value]) => ({className: (value as string[])[1], name}))
}

/**
 * The files of a pipeline repository a launch needs, small ones first (so that an unusable repo fails before the
 * weights download), from its listing and its parsed `model_index.json`. A component whose folder is missing, or a
 * model without weights in safetensors or `.bin`, is refused naming it.
 */
export function pipelineFiles(snapshot: RepoSnapshot, index: Record<string, unknown>, variant?: PipelineVariant): RemoteFile[] {
  const where = `the repo ${snapshot.repo} at ${snapshot.revision}`
  const components = componentsOf(index, snapshot.repo)
  // `_ignore_files`: files of the repository the pipeline's author marked as not to be loaded, as diffusers reads it.
  const ignored = new Set(Array.isArray(index._ignore_files) ? (index._ignore_files as string[]) : [])
  const listed = [...snapshot.files.values()].filter((file) => !ignored.has(file.path))
  const small: RemoteFile[] = listed.filter((file) => TOP_LEVEL.includes(file.path))
  const weights: RemoteFile[] = []
  let variantFound = false
  for (const {className, name} of components) {
    const inFolder = listed.filter((file) => file.path.startsWith(`${name}/`) && !file.path.slice(name.length + 1).includes('/'))
    if (inFolder.length === 0) throw new ServiceError(502, 'hub_not_found', `${where} lacks the folder ${name}/ of the component ${name} (${className}) its ${PIPELINE_INDEX} names.`)
    const names = inFolder.map((file) => file.path.slice(name.length + 1))
    const chosen = (['safetensors', 'bin'] as const)
      .flatMap((extension) => [...(variant ? [packaging(names, extension, variant.name)] : []), packaging(names, extension)])
      .find((files) => files.length > 0)
    if (!chosen) {
      if (WITHOUT_WEIGHTS.test(className) && !names.some((file) => /\.(onnx|pb|msgpack|flashpack)$/.test(file))) {
        small.push(...inFolder)
        continue
      }

      throw new ServiceError(502, 'hub_not_found', `${where} has no safetensors (or .bin) weights for the component ${name} (${className}) in ${name}/ (it has: ${names.slice(0, 8).join(', ')}); check model_id and model_revision.`)
    }

    const config = inFolder.find((file) => file.path === `${name}/config.json`)
    if (!config) throw new ServiceError(502, 'hub_not_found', `${where} lacks ${name}/config.json, the configuration of the component ${name} (${className}).`)
    variantFound ||= !!variant && chosen.some((file) => file.includes(`.${variant.name}`))
    small.push(config)
    for (const file of chosen) (file.endsWith('.json') ? small : weights).push(snapshot.files.get(`${name}/${file}`)!)
  }

  if (variant?.required && !variantFound)
    throw new ServiceError(502, 'hub_not_found', `${where} has no weights of the variant "${variant.name}" (default_model_config.variant); remove variant from the registration or pick a repository that has it.`)
  return [...small, ...weights]
}

/** Reads a downloaded `model_index.json`, or a 502 naming the repo when it is not JSON. */
async function readPipelineIndex(path: string, repo: string): Promise<Record<string, unknown>> {
  try {
    return JSON.parse(await readFile(path, 'utf8')) as Record<string, unknown>
  } catch (error) {
    throw new ServiceError(502, 'hub_error', `the repo ${repo} has a ${PIPELINE_INDEX} that cannot be read as JSON (${(error as Error).message}).`)
  }
}

/** Refuses a selection that lacks a shard the downloaded index (`unet/diffusion_pytorch_model.safetensors.index.json`) names. */
async function checkIndexedShards(snapshot: RepoSnapshot, files: RemoteFile[], indexPath: string, localIndex: string): Promise<void> {
  const folder = indexPath.slice(0, indexPath.lastIndexOf('/') + 1)
  const missing = [...(await indexedShards(localIndex, snapshot.repo, indexPath))].map((shard) => folder + shard).filter((shard) => !files.some((file) => file.path === shard))
  if (missing.length > 0)
    throw new ServiceError(502, 'hub_not_found', `the repo ${snapshot.repo} at ${snapshot.revision} lacks weight files its ${indexPath} names: ${missing.slice(0, 5).join(', ')}.`)
}

/**
 * The files of a pipeline repository to download: `fetchSmall` downloads one file into the cache (the store's verified
 * transfer) and answers its local path; `model_index.json` is fetched first to learn the components, then the shard
 * indexes of the selection to check that every shard they name is there, all before any weights.
 */
export async function selectPipelineFiles(snapshot: RepoSnapshot, variant: PipelineVariant | undefined, fetchSmall: (file: RemoteFile) => Promise<string>): Promise<RemoteFile[]> {
  const indexFile = snapshot.files.get(PIPELINE_INDEX)
  if (!indexFile) throw new ServiceError(502, 'hub_not_found', `the repo ${snapshot.repo} at ${snapshot.revision} has no ${PIPELINE_INDEX}, so it is not a diffusers pipeline; check model_id and model_format.`)
  const files = pipelineFiles(snapshot, await readPipelineIndex(await fetchSmall(indexFile), snapshot.repo), variant)
  for (const file of files.filter((candidate) => /\.index(\.[^./]+)?\.json$/.test(candidate.path))) await checkIndexedShards(snapshot, files, file.path, await fetchSmall(file))
  return files
}
