import type {ModelFamily, RegisterHook} from 'service-toolkit'

import {readdir, readFile} from 'node:fs/promises'

import {anthropicRoutes} from './anthropic.js'
import {chatRoute} from './chat.js'
import {completionsRoute} from './completions.js'
import {ollamaRoutes} from './ollama.js'
import {responsesRoutes} from './responses.js'

const CATALOGUE = new URL('../catalogue/', import.meta.url)

/** The first families of the catalogue, then one file per vendor under `llm/`, in name order so listings are stable. */
async function catalogueFamilies(): Promise<ModelFamily[]> {
  const vendors = new URL('llm/', CATALOGUE)
  const vendorFiles = (await readdir(vendors)).filter((name) => name.endsWith('.json')).sort()
  const files = [new URL('llm-families.json', CATALOGUE), ...vendorFiles.map((name) => new URL(name, vendors))]
  const lists = await Promise.all(files.map(async (file) => JSON.parse(await readFile(file, 'utf8')) as ModelFamily[]))
  return lists.flat()
}

const register: RegisterHook = async ({api}) => {
  const families = await catalogueFamilies()
  return {
    catalogue: [{families, modelType: 'LLM'}],
    modelTypes: [
      {
        defaultAbilities: ['chat', 'generate'],
        description: 'Large language models: chat and text completion.',
        name: 'LLM',
        registrationColumns: [
          ['Name', 'model_name'],
          ['Language', 'model_lang'],
          ['Ability', 'model_ability'],
          ['Context', 'context_length'],
        ],
        validateFamily(family) {
          if (family.model_ability !== undefined && !Array.isArray(family.model_ability))
            throw api.errors.badRequest('model_ability must be an array such as ["chat"] or ["generate"].', 'model_ability')
          if (family.context_length !== undefined && (!Number.isInteger(family.context_length) || family.context_length < 1))
            throw api.errors.badRequest('context_length must be a positive integer.', 'context_length')
          // Only embedding and rerank specs may leave the size out; an LLM is launched by its size.
          const unsized = (family.model_specs ?? []).findIndex((spec) => spec.model_size_in_billions === undefined)
          if (unsized >= 0)
            throw api.errors.badRequest(`model_specs[${unsized}].model_size_in_billions is required for LLM models (e.g. "0_5" or 7).`, `model_specs[${unsized}].model_size_in_billions`)
        },
      },
    ],
    routes: [chatRoute(api), completionsRoute(api), ...anthropicRoutes(api), ...ollamaRoutes(api), ...responsesRoutes(api)],
  }
}

export default register
