/**
 * Image families in Xinference's format: no `model_specs`, but `model_src` at the top level, one entry per hub with
 * the diffusers repository (`model_id`, `model_revision`) and, where published, its GGUF files (`gguf_model_id`,
 * `gguf_quantizations`, `gguf_model_file_name_template`); or a custom registration's `model_uri`. They become the
 * catalogue's specs: format `diffusers` for a pipeline repository or folder, `ggufv2` for the GGUF files, so the
 * kernel finds the engine that runs each.
 */
import type {FamilySpec, HubSource, KernelApi, ModelFamily} from 'service-toolkit'

import {isAbsolute} from 'node:path'
import {pathToFileURL} from 'node:url'

export const IMAGE_ABILITIES = ['text2image', 'image2image', 'inpainting', 'ocr'] as const

interface ImageHubSource {
  model_id?: string
  model_revision?: string | null
  gguf_model_id?: string
  gguf_quantizations?: string[]
  gguf_model_file_name_template?: string
  model_file_name_template?: string
}

/**
 * The specs a family in Xinference's form implies; a family that already has specs is kept as it is. Used for the
 * built-in catalogue and for registrations (of the image and the video type alike).
 */
export function normalizeMediaFamily(family: ModelFamily): ModelFamily {
  if (family.model_specs !== undefined) return family
  const specs: FamilySpec[] = []
  const sources = Object.entries((family.model_src ?? {}) as Record<string, ImageHubSource>)
  if (typeof family.model_uri === 'string') {
    const uri = isAbsolute(family.model_uri) ? pathToFileURL(family.model_uri).href : family.model_uri
    specs.push({model_format: family.model_uri.endsWith('.gguf') ? 'ggufv2' : 'diffusers', model_uri: uri})
  } else if (sources.length === 0 && typeof family.model_id === 'string') {
    sources.push([typeof family.model_hub === 'string' ? family.model_hub : 'huggingface', family as ImageHubSource])
  }

  const pipelines = sources.filter(([, source]) => source.model_id)
  if (pipelines.length > 0) {
    specs.push({
      model_format: 'diffusers',
      model_src: Object.fromEntries(
        pipelines.map(([hub, source]): [string, HubSource] => [
          hub,
          {model_file_name_template: source.model_file_name_template, model_id: source.model_id, model_revision: source.model_revision ?? null},
        ]),
      ),
    })
  }

  const ggufs = sources.filter(([, source]) => source.gguf_model_id && source.gguf_model_file_name_template)
  if (ggufs.length > 0) {
    specs.push({
      model_format: 'ggufv2',
      model_src: Object.fromEntries(
        ggufs.map(([hub, source]): [string, HubSource] => [
          hub,
          {model_file_name_template: source.gguf_model_file_name_template, model_id: source.gguf_model_id, quantizations: source.gguf_quantizations ?? []},
        ]),
      ),
    })
  }

  return {...family, model_specs: specs}
}

const isPlainObject = (value: unknown) => typeof value === 'object' && value !== null && !Array.isArray(value)

/** Checks a media family's own fields; `abilities` are those its type allows. */
export function validateMediaFamily(api: KernelApi, family: ModelFamily, abilities: readonly string[]): void {
  const declared = family.model_ability
  if (declared !== undefined) {
    if (!Array.isArray(declared) || declared.length === 0) throw api.errors.badRequest(`model_ability must be a non-empty list of ${abilities.join(', ')}.`, 'model_ability')
    const unknown = declared.find((ability) => !abilities.includes(ability))
    if (unknown !== undefined) throw api.errors.badRequest(`model_ability "${unknown}" is not one of ${abilities.join(', ')}.`, 'model_ability')
  }

  for (const field of ['default_model_config', 'default_generate_config', 'model_src', 'virtualenv']) {
    if (family[field] !== undefined && family[field] !== null && !isPlainObject(family[field])) throw api.errors.badRequest(`${field} must be a JSON object.`, field)
  }

  if (family.model_specs === undefined && family.model_uri === undefined && family.model_src === undefined && family.model_id === undefined)
    throw api.errors.badRequest('the registration needs model_uri (a pipeline folder or GGUF file on this machine) or model_src (hub repositories).', 'model_uri')
  if (typeof family.model_uri === 'string' && !isAbsolute(family.model_uri) && !family.model_uri.startsWith('file://'))
    throw api.errors.badRequest(`model_uri "${family.model_uri}" must be an absolute path or a file:// URI.`, 'model_uri')
}
