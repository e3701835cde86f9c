import type {KernelApi, ModelFamily, RegisterHook} from 'service-toolkit'

import {readFile} from 'node:fs/promises'

import {embeddingsRoute} from './embeddings.js'
import {ollamaEmbeddingRoutes} from './ollama.js'

const positiveInteger = (value: unknown) => Number.isInteger(value) && (value as number) > 0

function validateFamily(api: KernelApi, family: ModelFamily) {
  for (const field of ['dimensions', 'max_tokens'])
    if (family[field] !== undefined && !positiveInteger(family[field])) throw api.errors.badRequest(`${field} must be a positive integer.`, field)
  const sizes = family.matryoshka_dimensions
  if (sizes !== undefined && (!Array.isArray(sizes) || !sizes.every((size) => positiveInteger(size))))
    throw api.errors.badRequest('matryoshka_dimensions must be a list of positive integers, the vector sizes the model was trained to allow.', 'matryoshka_dimensions')
}

const register: RegisterHook = async ({api}) => {
  const families = JSON.parse(await readFile(new URL('../catalogue/embedding-families.json', import.meta.url), 'utf8')) as ModelFamily[]
  return {
    catalogue: [{families, modelType: 'embedding'}],
    modelTypes: [
      {
        defaultAbilities: ['embed'],
        description: 'Text embedding models: one vector per input, for search, clustering and retrieval.',
        name: 'embedding',
        registrationColumns: [
          ['Name', 'model_name'],
          ['Language', 'language'],
          ['Dimensions', 'dimensions'],
          ['Max tokens', 'max_tokens'],
        ],
        validateFamily: (family) => validateFamily(api, family),
      },
    ],
    routes: [embeddingsRoute(api), ...ollamaEmbeddingRoutes(api)],
  }
}

export default register
