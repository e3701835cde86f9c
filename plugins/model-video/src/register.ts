import type {ModelFamily, RegisterHook} from 'service-toolkit'

import {readFile} from 'node:fs/promises'

import {videoRoutes} from './routes.js'

const VIDEO_ABILITIES = ['text2video', 'image2video', 'firstlastframe2video']
/** `response_format: url` videos: kept an hour, 1 GiB at most (the oldest go first). */
const STORE_BYTES = 1024 * 1024 * 1024
const STORE_TTL_MS = 60 * 60 * 1000

const register: RegisterHook = async ({api}) => {
  const families = (JSON.parse(await readFile(new URL('../catalogue/video-families.json', import.meta.url), 'utf8')) as ModelFamily[]).map(api.media.normalizeFamily)
  const store = new api.media.MediaStore(STORE_BYTES, STORE_TTL_MS)
  return {
    catalogue: [{families, modelType: 'video'}],
    modelTypes: [
      {
        defaultAbilities: ['text2video'],
        description: 'Video models: make videos from text, from a picture, or between a first and a last frame (diffusion pipelines).',
        name: 'video',
        normalizeFamily(family) {
          api.media.validateFamily(family, VIDEO_ABILITIES)
          return api.media.normalizeFamily(family)
        },
        registrationColumns: [
          ['Name', 'model_name'],
          ['Family', 'model_family'],
          ['Abilities', 'model_ability'],
        ],
      },
    ],
    routes: [...videoRoutes(api, store), api.media.mediaFileRoute(store, '/v1/video/files/:id', 'video', ['video/mp4', 'image/png', 'application/octet-stream'])],
  }
}

export default register
