/**
 * Companion files: what a model's own files need beside them from other repositories of the same hub, such as the VAE
 * and text encoders stable-diffusion.cpp reads beside a diffusion-only FLUX.1 GGUF (city96's files hold the transformer
 * alone). A hub source lists them (`companion_files`; an image or video family in Xinference's form says
 * `gguf_companion_files` beside its `gguf_*` fields); a launch downloads each through the weight store as an entry of its
 * own, shared by every model naming the same file, and gives its path to the engine as the launch parameter its `role`
 * names, unless the launch names that parameter itself.
 */
import type {ResolvedSpec} from './catalogue.js'

import {badRequest} from './errors.js'

export interface CompanionFile {
  /** The engine's launch parameter that takes the file's path, e.g. `vae`, `clip_l`, `t5xxl`. */
  role: string
  /** The repository on the spec's hub. */
  model_id: string
  /** A branch, tag or commit; the hub's default branch when absent. */
  model_revision?: string | null
  /** The file's path in the repository, e.g. `text_encoders/clip_l.safetensors`. */
  file_name: string
}

const isText = (value: unknown) => typeof value === 'string' && value.trim() !== ''

/** Checks a registration's list of companion files; `param` is the field it came from. */
export function validateCompanionFiles(value: unknown, param: string): void {
  if (value === undefined || value === null) return
  if (!Array.isArray(value)) throw badRequest(`${param} must be a list of {role, model_id, file_name, model_revision?}.`, param)
  for (const [index, companion] of value.entries()) {
    const entry = (companion ?? {}) as Record<string, unknown>
    const missing = ['role', 'model_id', 'file_name'].filter((field) => !isText(entry[field]))
    if (missing.length > 0) throw badRequest(`${param}[${index}] needs ${missing.join(', ')} (text): the launch parameter it fills, the repository and the file's path in it.`, param)
    if (entry.model_revision !== undefined && entry.model_revision !== null && !isText(entry.model_revision))
      throw badRequest(`${param}[${index}].model_revision must be a branch, tag or commit.`, param)
  }

  const roles = value.map((companion: CompanionFile) => companion.role)
  const repeated = roles.find((role, index) => roles.indexOf(role) !== index)
  if (repeated !== undefined) throw badRequest(`${param} names the role ${repeated} twice; each launch parameter takes one file.`, param)
}

/**
 * The spec a companion file downloads as: one file from the spec's hub, cached under a name of its own (its repository
 * and file), so that the models sharing it (FLUX.1 schnell and dev share their text encoders) download it once.
 */
export function companionSpec(spec: ResolvedSpec, companion: CompanionFile): {modelName: string; spec: ResolvedSpec} {
  const stem = companion.file_name.replace(/\.[^./]+$/, '')
  const format = /\.([^./]+)$/.exec(companion.file_name)?.[1] ?? 'file'
  return {
    modelName: [...companion.model_id.split('/'), ...stem.split('/')].join('--'),
    spec: {
      model_file_name_split_template: null,
      model_file_name_template: companion.file_name,
      model_format: format,
      model_hub: spec.model_hub,
      model_id: companion.model_id,
      model_revision: companion.model_revision ?? null,
      model_size_in_billions: 'none',
      model_uri: null,
      quantization: 'none',
      quantization_parts: null,
    },
  }
}
