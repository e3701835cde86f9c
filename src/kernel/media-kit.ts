/**
 * What the image and video model types share, handed to their plugins as `KernelApi.media` (plugins never import
 * each other): reading their families in Xinference's form, checking what a request sends before any model sees it
 * (uploaded pictures, read from their own bytes; sizes; Xinference's `kwargs`; form fields, which are text), and
 * keeping what `response_format: url` answers for the service to serve.
 */
import type {FamilySpec, HubSource, ModelFamily} from './catalogue.js'
import type {CompanionFile} from './companions.js'
import type {RouteDefinition} from './contracts.js'
import type {InputImage} from './media.js'
import type {Schema} from './schema.js'
import type {UploadedFile} from './uploads.js'

import {randomUUID} from 'node:crypto'
import {readFile} from 'node:fs/promises'
import {createRequire} from 'node:module'
import {isAbsolute} from 'node:path'
import {pathToFileURL} from 'node:url'

import {validateCompanionFiles} from './companions.js'
import {badRequest, notFound} from './errors.js'
import * as schema from './schema.js'

// ------------------------------------------------------------------------------------------------ families

interface ImageHubSource {
  model_id?: string
  model_revision?: string | null
  gguf_model_id?: string
  gguf_quantizations?: string[]
  gguf_model_file_name_template?: string
  model_file_name_template?: string
  /** What the GGUF file needs beside it from other repositories (see companions.ts). */
  gguf_companion_files?: CompanionFile[]
}

/**
 * The specs a family in Xinference's form implies; a family that already has specs is kept as it is. Used for the
 * built-in catalogue and for registrations (of the image and the video type alike). A repository or folder is a
 * diffusers pipeline, or, for a family that only reads text (ocr), a transformers model (`pytorch`).
 */
export function normalizeMediaFamily(family: ModelFamily): ModelFamily {
  if (family.model_specs !== undefined) return family
  const abilities = Array.isArray(family.model_ability) ? (family.model_ability as string[]) : []
  const folderFormat = abilities.length > 0 && abilities.every((ability) => ability === 'ocr') ? 'pytorch' : 'diffusers'
  const specs: FamilySpec[] = []
  const sources = Object.entries((family.model_src ?? {}) as Record<string, ImageHubSource>)
  if (typeof family.model_uri === 'string') {
    const uri = isAbsolute(family.model_uri) ? pathToFileURL(family.model_uri).href : family.model_uri
    specs.push({model_format: family.model_uri.endsWith('.gguf') ? 'ggufv2' : folderFormat, model_uri: uri})
  } else if (sources.length === 0 && typeof family.model_id === 'string') {
    sources.push([typeof family.model_hub === 'string' ? family.model_hub : 'huggingface', family as ImageHubSource])
  }

  const pipelines = sources.filter(([, source]) => source.model_id)
  if (pipelines.length > 0) {
    specs.push({
      model_format: folderFormat,
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
          {
            model_file_name_template: source.gguf_model_file_name_template,
            model_id: source.gguf_model_id,
            quantizations: source.gguf_quantizations ?? [],
            ...(source.gguf_companion_files ? {companion_files: source.gguf_companion_files} : {}),
          },
        ]),
      ),
    })
  }

  return {...family, model_specs: specs}
}

const isPlainObject = (value: unknown) => typeof value === 'object' && value !== null && !Array.isArray(value)

/** Checks a media family's own fields; `abilities` are those its type allows. */
export function validateMediaFamily(family: ModelFamily, abilities: readonly string[]): void {
  const declared = family.model_ability
  if (declared !== undefined) {
    if (!Array.isArray(declared) || declared.length === 0) throw badRequest(`model_ability must be a non-empty list of ${abilities.join(', ')}.`, 'model_ability')
    const unknown = declared.find((ability) => !abilities.includes(ability))
    if (unknown !== undefined) throw badRequest(`model_ability "${unknown}" is not one of ${abilities.join(', ')}.`, 'model_ability')
  }

  for (const field of ['default_model_config', 'default_generate_config', 'model_src', 'virtualenv']) {
    if (family[field] !== undefined && family[field] !== null && !isPlainObject(family[field])) throw badRequest(`${field} must be a JSON object.`, field)
  }

  for (const [hub, source] of Object.entries(isPlainObject(family.model_src) ? (family.model_src as Record<string, ImageHubSource>) : {}))
    validateCompanionFiles(source?.gguf_companion_files, `model_src.${hub}.gguf_companion_files`)

  if (family.model_specs === undefined && family.model_uri === undefined && family.model_src === undefined && family.model_id === undefined)
    throw badRequest('the registration needs model_uri (a pipeline folder or GGUF file on this machine) or model_src (hub repositories).', 'model_uri')
  if (typeof family.model_uri === 'string' && !isAbsolute(family.model_uri) && !family.model_uri.startsWith('file://'))
    throw badRequest(`model_uri "${family.model_uri}" must be an absolute path or a file:// URI.`, 'model_uri')
}

// ------------------------------------------------------------------------------------------------- requests

/** The largest side a request may ask for; larger than any catalogue model was trained for. */
export const MAX_SIDE = 4096
/** Latent diffusion works on 8×8 pixel blocks; a model needing more (FLUX: 16) says so itself. */
export const SIZE_MULTIPLE = 8
/** The most a generation request may ask for, in its own fields or in kwargs: images, videos, denoising steps, frames. */
export const GENERATION_LIMITS = {frames: 1024, images: 10, steps: 1000, videos: 4}

/**
 * The most pixels an input picture may have: Pillow's own bound against decompression bombs (a small file that
 * decodes to gigabytes), which the image programs read pictures with; refused here, naming the field, before any
 * program decodes it.
 */
export const MAX_INPUT_PIXELS = 89_478_485

const MEDIA_TYPES: Record<string, string> = {bmp: 'image/bmp', gif: 'image/gif', jpg: 'image/jpeg', png: 'image/png', tiff: 'image/tiff', webp: 'image/webp'}

const require = createRequire(import.meta.url)

export function imageOf(bytes: Buffer, field: string): InputImage {
  let dimensions
  try {
    // Required by the first upload rather than at start: the idle service need not hold its 26 modules.
    const {imageSize} = require('image-size') as typeof import('image-size')
    dimensions = imageSize(bytes)
  } catch {}

  const mediaType = dimensions?.type ? MEDIA_TYPES[dimensions.type] : undefined
  if (!dimensions || !mediaType || !dimensions.width || !dimensions.height)
    throw badRequest(`\`${field}\` is not an image this service reads; send a PNG, JPEG or WebP file.`, field)
  if (dimensions.width * dimensions.height > MAX_INPUT_PIXELS)
    throw badRequest(
      `\`${field}\` is ${dimensions.width}x${dimensions.height} pixels, more than the ${MAX_INPUT_PIXELS.toLocaleString('en-US')} this service reads (about ${Math.floor(Math.sqrt(MAX_INPUT_PIXELS))}x${Math.floor(Math.sqrt(MAX_INPUT_PIXELS))}); send a smaller picture.`,
      field,
    )
  return {data: bytes.toString('base64'), field, height: dimensions.height, mediaType, width: dimensions.width}
}

export async function uploadedImages(files: UploadedFile[] | undefined, field: string): Promise<InputImage[]> {
  return Promise.all((files ?? []).map(async (file, index) => imageOf(await readFile(file.path), files!.length > 1 ? `${field}[${index}]` : field)))
}

export interface Size {
  width: number
  height: number
}

/**
 * `WIDTHxHEIGHT` (OpenAI) or `WIDTH*HEIGHT` (Xinference); `auto` (and for edits `original`) leave it to the model or
 * the input image.
 */
export function parseSize(size: string | null | undefined, field = 'size'): Size | undefined {
  if (size === undefined || size === null || size === 'auto' || size === 'original') return undefined
  const match = /^(\d+)\s*[x*×]\s*(\d+)$/.exec(size.trim())
  if (!match) throw badRequest(`\`${field}\` must be WIDTHxHEIGHT in pixels, such as 512x512, or auto (got "${size}").`, field)
  const [width, height] = [Number(match[1]), Number(match[2])]
  for (const side of [width, height]) {
    if (side < SIZE_MULTIPLE || side > MAX_SIDE || side % SIZE_MULTIPLE !== 0)
      throw badRequest(
        `\`${field}\` ${size} cannot be made: each side must be a multiple of ${SIZE_MULTIPLE} from ${SIZE_MULTIPLE} to ${MAX_SIDE} pixels, such as ${Math.max(SIZE_MULTIPLE, Math.min(MAX_SIDE, Math.round(side / SIZE_MULTIPLE) * SIZE_MULTIPLE))}.`,
        field,
      )
  }

  return {height, width}
}

/**
 * Pipeline arguments that `kwargs` may give instead of the request's own fields (Xinference's clients pass
 * `num_inference_steps` there), by the names of the diffusers and stable-diffusion.cpp engines: held to the limits of
 * the field each stands for, so that kwargs cannot ask for what the route refuses.
 */
const {frames, images, steps, videos} = GENERATION_LIMITS
const KWARG_BOUNDS: Record<string, {field: string; minimum: number; maximum: number; multiple?: number}> = {
  batch_count: {field: 'n', maximum: images, minimum: 1},
  height: {field: 'size', maximum: MAX_SIDE, minimum: SIZE_MULTIPLE, multiple: SIZE_MULTIPLE},
  num_frames: {field: 'num_frames', maximum: frames, minimum: 1},
  num_images_per_prompt: {field: 'n', maximum: images, minimum: 1},
  num_inference_steps: {field: 'steps', maximum: steps, minimum: 1},
  num_videos_per_prompt: {field: 'n', maximum: videos, minimum: 1},
  sample_steps: {field: 'steps', maximum: steps, minimum: 1},
  video_frames: {field: 'num_frames', maximum: frames, minimum: 1},
  width: {field: 'size', maximum: MAX_SIDE, minimum: SIZE_MULTIPLE, multiple: SIZE_MULTIPLE},
}

function checkKwargBounds(kwargs: Record<string, unknown>): void {
  for (const [name, value] of Object.entries(kwargs)) {
    const bounds = KWARG_BOUNDS[name]
    if (!bounds || value === null || value === undefined) continue
    const {field, maximum, minimum, multiple} = bounds
    if (typeof value !== 'number' || !Number.isInteger(value) || value < minimum || value > maximum || (multiple !== undefined && value % multiple !== 0))
      throw badRequest(
        `\`kwargs.${name}\` must be an integer from ${minimum} to ${maximum}${multiple ? `, a multiple of ${multiple}` : ''}, as \`${field}\` is (got ${JSON.stringify(value)}).`,
        'kwargs',
      )
  }
}

/** The largest size a model makes from a picture of this size by default: its own, in whole blocks, within MAX_SIDE. */
export function sizeOfPicture({height, width}: {width: number; height: number}): Size {
  const scale = Math.min(1, MAX_SIDE / Math.max(width, height))
  const side = (pixels: number) => Math.max(SIZE_MULTIPLE, Math.floor((pixels * scale) / SIZE_MULTIPLE) * SIZE_MULTIPLE)
  return {height: side(height), width: side(width)}
}

/** Xinference sends `kwargs` as a JSON string (form fields can be nothing else); an object is taken as well. */
export function parseKwargs(kwargs: unknown): Record<string, unknown> {
  if (kwargs === undefined || kwargs === null || kwargs === '') return {}
  let value = kwargs
  if (typeof kwargs === 'string') {
    try {
      value = JSON.parse(kwargs)
    } catch {
      throw badRequest('`kwargs` is not valid JSON; give a JSON object of the pipeline\'s keyword arguments.', 'kwargs')
    }
  }

  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw badRequest('`kwargs` must be a JSON object.', 'kwargs')
  schema.checkNesting(value, 'kwargs')
  checkKwargBounds(value as Record<string, unknown>)
  return value as Record<string, unknown>
}

/**
 * A number that may come as a form field's text: multipart bodies carry only strings, so `n=2` arrives as "2" and is
 * read as the number it says before the number's own checks.
 */
export function formNumber(options: Parameters<typeof schema.number>[0] = {}): Schema<number> {
  const number = schema.number(options)
  return {...number, parse: (value, path) => number.parse(typeof value === 'string' && value.trim() !== '' && Number.isFinite(Number(value)) ? Number(value) : value, path)}
}

/** A number field of a route that takes it as JSON or, with `form`, as a multipart form's text. */
export function numberField(form: boolean, options: Parameters<typeof schema.number>[0] = {}): Schema<number> {
  return form ? formNumber(options) : schema.number(options)
}

export function formBoolean(description: string): Schema<boolean> {
  const boolean = schema.boolean({description})
  return {...boolean, parse: (value, path) => boolean.parse(value === 'true' ? true : value === 'false' ? false : value, path)}
}

// ------------------------------------------------------------------------------------------- url answers

interface Stored {
  bytes: Buffer
  mediaType: string
  expires: number
}

export class MediaStore {
  private readonly items = new Map<string, Stored>()
  private held = 0

  constructor(
    private readonly maxBytes: number,
    private readonly ttlMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Keeps the bytes and answers the id they are served under. */
  put(bytes: Buffer, mediaType: string, extension: string): string {
    this.evict()
    const id = `${randomUUID()}.${extension}`
    this.items.set(id, {bytes, expires: this.now() + this.ttlMs, mediaType})
    this.held += bytes.length
    while (this.held > this.maxBytes && this.items.size > 1) this.drop(this.items.keys().next().value!)
    return id
  }

  get(id: string): Stored | undefined {
    this.evict()
    return this.items.get(id)
  }

  private evict() {
    const now = this.now()
    for (const [id, item] of this.items) {
      // Insertion order is expiry order, since every item lives as long.
      if (item.expires > now) break
      this.drop(id)
    }
  }

  private drop(id: string) {
    this.held -= this.items.get(id)?.bytes.length ?? 0
    this.items.delete(id)
  }
}

/** The route that serves a store's files, under `path` (which ends in `:id`). */
/** `produces`: the media types the store's files may have, for /openapi.json. */
export function mediaFileRoute(store: MediaStore, path: string, tag: string, produces: string[]): RouteDefinition {
  return {
    example: {params: {id: `00000000-0000-4000-8000-000000000000.${produces[0].split('/')[1]}`}},
    async handler({params}) {
      const item = store.get(params.id)
      if (!item) throw notFound(`no file ${params.id}: files are kept for a while after they are made, then removed; generate it again.`)
      return {body: item.bytes, headers: {'cache-control': 'private, max-age=3600', 'content-type': item.mediaType}, kind: 'json'}
    },
    method: 'GET',
    path,
    permission: 'models:read',
    produces,
    response: {format: 'binary', type: 'string'},
    summary: 'A generated file answered with response_format url, while it is kept',
    tag,
  }
}

/** The URL a client reaches a stored file at: the host it called, so it works through the same address and proxy. */
export function fileUrl(headers: Record<string, string | string[] | undefined>, path: string): string {
  const first = (value: string | string[] | undefined) => (Array.isArray(value) ? value[0] : value?.split(',')[0]?.trim())
  const protocol = first(headers['x-forwarded-proto']) ?? 'http'
  const host = first(headers['x-forwarded-host']) ?? first(headers.host) ?? '127.0.0.1'
  return `${protocol}://${host}${path}`
}

/** The kit as plugins receive it. */
export const mediaKit = {
  fileUrl,
  formBoolean,
  limits: GENERATION_LIMITS,
  formNumber,
  imageOf,
  numberField,
  MediaStore,
  mediaFileRoute,
  normalizeFamily: normalizeMediaFamily,
  parseKwargs,
  parseSize,
  sizeOfPicture,
  uploadedImages,
  validateFamily: validateMediaFamily,
}

export type MediaKit = typeof mediaKit
