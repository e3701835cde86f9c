import type {ModelFamily, RegisterHook} from 'service-toolkit'

import {readFile} from 'node:fs/promises'

import {rerankRoute} from './rerank.js'

const register: RegisterHook = async ({api}) => {
  const families = JSON.parse(await readFile(new URL('../catalogue/rerank-families.json', import.meta.url), 'utf8')) as ModelFamily[]
  return {
    catalogue: [{families, modelType: 'rerank'}],
    modelTypes: [
      {
        defaultAbilities: ['rerank'],
        description: 'Rerank models (cross-encoders): score documents by relevance to a query.',
        name: 'rerank',
        registrationColumns: [
          ['Name', 'model_name'],
          ['Language', 'language'],
          ['Max tokens', 'max_tokens'],
        ],
        validateFamily(family) {
          if (family.max_tokens !== undefined && (!Number.isInteger(family.max_tokens) || (family.max_tokens as number) < 1))
            throw api.errors.badRequest('max_tokens must be a positive integer.', 'max_tokens')
        },
      },
    ],
    routes: [rerankRoute(api)],
  }
}

export default register
