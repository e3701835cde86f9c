import type {ModelFamily, RegisterHook} from 'service-toolkit'

import {readFile} from 'node:fs/promises'

import {imageRoutes} from './routes.js'

const IMAGE_ABILITIES = ['text2image', 'image2image', 'inpainting', 'ocr']

/** `response_format: url` images: kept an hour, 256 MiB at most (the oldest go first). */
const STORE_BYTES = 256 * 1024 * 1024
const STORE_TTL_MS = 60 * 60 * 1000

const register: RegisterHook = async ({api}) => {
  const families = (JSON.parse(await readFile(new URL('../catalogue/image-families.json', import.meta.url), 'utf8')) as ModelFamily[]).map(api.media.normalizeFamily)
  const store = new api.media.MediaStore(STORE_BYTES, STORE_TTL_MS)
  return {
    catalogue: [{families, modelType: 'image'}],
    modelTypes: [
      {
        defaultAbilities: ['text2image'],
        description: 'Image models: make images from text, edit and repaint them (diffusion pipelines), read text in them (OCR).',
        name: 'image',
        normalizeFamily(family) {
          api.media.validateFamily(family, IMAGE_ABILITIES)
          return api.media.normalizeFamily(family)
        },
        registrationColumns: [
          ['Name', 'model_name'],
          ['Family', 'model_family'],
          ['Abilities', 'model_ability'],
        ],
      },
    ],
    routes: [...imageRoutes(api, store), api.media.mediaFileRoute(store, '/v1/images/files/:id', 'images', ['image/png'])],
  }
}

export default register
