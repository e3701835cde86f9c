/**
 * What the image routes read from a request before any model sees it: uploaded pictures (checked to be images,
 * their size read from their own bytes), the requested size, and Xinference's `kwargs`. Each mistake is a 400
 * naming the field.
 */
import type {InputImage, KernelApi, Schema, UploadedFile} from 'service-toolkit'

import {readFile} from 'node:fs/promises'
import {imageSize} from 'image-size'

/** The largest side a request may ask for; larger than any catalogue model was trained for. */
export const MAX_SIDE = 4096
/** Latent diffusion works on 8×8 pixel blocks; a model needing more (FLUX: 16) says so itself. */
export const SIZE_MULTIPLE = 8

const MEDIA_TYPES: Record<string, string> = {bmp: 'image/bmp', gif: 'image/gif', jpg: 'image/jpeg', png: 'image/png', tiff: 'image/tiff', webp: 'image/webp'}

export function imageOf(api: KernelApi, bytes: Buffer, field: string): InputImage {
  let dimensions
  try {
    dimensions = imageSize(bytes)
  } catch {}

  const mediaType = dimensions?.type ? MEDIA_TYPES[dimensions.type] : undefined
  if (!dimensions || !mediaType || !dimensions.width || !dimensions.height)
    throw api.errors.badRequest(`\`${field}\` is not an image this service reads; send a PNG, JPEG or WebP file.`, field)
  return {data: bytes.toString('base64'), height: dimensions.height, mediaType, width: dimensions.width}
}

export async function uploadedImages(api: KernelApi, files: UploadedFile[] | undefined, field: string): Promise<InputImage[]> {
  return Promise.all((files ?? []).map(async (file, index) => imageOf(api, await readFile(file.path), files!.length > 1 ? `${field}[${index}]` : field)))
}

export interface Size {
  width: number
  height: number
}

/**
 * `WIDTHxHEIGHT` (OpenAI) or `WIDTH*HEIGHT` (Xinference); `auto` (and for edits `original`) leave it to the model or
 * the input image.
 */
export function parseSize(api: KernelApi, size: string | null | undefined, field = 'size'): Size | undefined {
  if (size === undefined || size === null || size === 'auto' || size === 'original') return undefined
  const match = /^(\d+)\s*[x*×]\s*(\d+)$/.exec(size.trim())
  if (!match) throw api.errors.badRequest(`\`${field}\` must be WIDTHxHEIGHT in pixels, such as 512x512, or auto (got "${size}").`, field)
  const [width, height] = [Number(match[1]), Number(match[2])]
  for (const side of [width, height]) {
    if (side < SIZE_MULTIPLE || side > MAX_SIDE || side % SIZE_MULTIPLE !== 0)
      throw api.errors.badRequest(
        `\`${field}\` ${size} cannot be made: each side must be a multiple of ${SIZE_MULTIPLE} from ${SIZE_MULTIPLE} to ${MAX_SIDE} pixels, such as ${Math.max(SIZE_MULTIPLE, Math.min(MAX_SIDE, Math.round(side / SIZE_MULTIPLE) * SIZE_MULTIPLE))}.`,
        field,
      )
  }

  return {height, width}
}

/** Xinference sends `kwargs` as a JSON string (form fields can be nothing else); an object is taken as well. */
export function parseKwargs(api: KernelApi, kwargs: unknown): Record<string, unknown> {
  if (kwargs === undefined || kwargs === null || kwargs === '') return {}
  let value = kwargs
  if (typeof kwargs === 'string') {
    try {
      value = JSON.parse(kwargs)
    } catch {
      throw api.errors.badRequest('`kwargs` is not valid JSON; give a JSON object of the pipeline\'s keyword arguments.', 'kwargs')
    }
  }

  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw api.errors.badRequest('`kwargs` must be a JSON object.', 'kwargs')
  return value as Record<string, unknown>
}

/**
 * A number that may come as a form field's text: multipart bodies carry only strings, so `n=2` arrives as "2" and is
 * read as the number it says before the number's own checks.
 */
export function formNumber(s: KernelApi['schema'], options: Parameters<KernelApi['schema']['number']>[0] = {}): Schema<number> {
  const schema = s.number(options)
  return {...schema, parse: (value, path) => schema.parse(typeof value === 'string' && value.trim() !== '' && Number.isFinite(Number(value)) ? Number(value) : value, path)}
}

export function formBoolean(s: KernelApi['schema'], description: string): Schema<boolean> {
  const schema = s.boolean({description})
  return {...schema, parse: (value, path) => schema.parse(value === 'true' ? true : value === 'false' ? false : value, path)}
}
