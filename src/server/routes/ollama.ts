/**
 * Ollama's listing routes: `GET /api/version`, `GET /api/tags` and `GET /api/ps` (the running models a client may
 * chat with or embed with; Ollama's "local" and "loaded" are the same here, since a model is used only while it runs)
 * and `POST /api/show`. The generation and embedding routes come from the LLM and embedding plugins.
 */
import type {ModelHandle, RouteDefinition} from '../../kernel/contracts.js'

import * as s from '../../kernel/schema.js'

/** The model types whose models Ollama's routes use: chat and generate, and embed. */
const OLLAMA_TYPES = new Set(['LLM', 'embedding'])
const EPOCH = new Date(0).toISOString()

const showSchema = s.object({model: s.string({description: 'Uid of a running model.', minLength: 1}), verbose: s.optional(s.boolean())}, {title: 'OllamaShowRequest'})
const json = (body: unknown) => ({body, kind: 'json' as const})

/** What Ollama calls a model's capabilities, from its abilities. */
function capabilitiesOf(model: ModelHandle): string[] {
  const abilities = new Set(model.abilities)
  return [
    ...(abilities.has('generate') || abilities.has('chat') ? ['completion'] : []),
    ...(abilities.has('tools') ? ['tools'] : []),
    ...(abilities.has('vision') ? ['vision'] : []),
    ...(abilities.has('reasoning') || abilities.has('hybrid') ? ['thinking'] : []),
    ...(abilities.has('embed') || model.modelType === 'embedding' ? ['embedding'] : []),
  ]
}

function detailsOf(model: ModelHandle) {
  const description = model.description
  const size = description.model_size_in_billions
  return {
    families: [model.modelName],
    family: model.modelName,
    format: String(description.model_format ?? ''),
    parameter_size: size === undefined || size === null || size === 'none' ? '' : `${String(size).replace('_', '.')}B`,
    parent_model: '',
    quantization_level: String(description.quantization ?? ''),
  }
}

function entryOf(model: ModelHandle) {
  const created = model.description.created
  return {
    details: detailsOf(model),
    digest: '',
    model: model.uid,
    modified_at: typeof created === 'number' ? new Date(created * 1000).toISOString() : EPOCH,
    name: model.uid,
    size: 0,
  }
}

const usable = (models: ModelHandle[]) => models.filter((model) => OLLAMA_TYPES.has(model.modelType))

/**
 * `expiresAt` answers when an idle model will be unloaded (milliseconds since the epoch), or undefined while a request
 * holds it or its keep-alive is forever (src/cluster/on-demand.ts).
 */
export function ollamaRoutes({expiresAt = () => undefined, version}: {expiresAt?: (uid: string) => number | undefined; version: string}): RouteDefinition[] {
  const routes: Array<RouteDefinition<any>> = [
    {
      async handler() {
        return json({version})
      },
      method: 'GET',
      path: '/api/version',
      permission: 'public',
      response: s.object({version: s.string()}).json,
      summary: "Ollama: the service's version",
      tag: 'ollama',
    },
    {
      async handler({models}) {
        return json({models: usable(models.list()).map(entryOf)})
      },
      method: 'GET',
      path: '/api/tags',
      permission: 'models:list',
      summary: 'Ollama: the models a client can use (the running LLM and embedding models)',
      tag: 'ollama',
    },
    {
      async handler({models}) {
        // A model kept loaded (a keep-alive of forever, or a request using it now) is shown as Ollama shows one: far away.
        const never = new Date(Date.UTC(2318, 0, 1)).toISOString()
        const expiry = (uid: string) => {
          const at = expiresAt(uid)
          return at === undefined ? never : new Date(at).toISOString()
        }
        return json({models: usable(models.list()).map((model) => ({...entryOf(model), expires_at: expiry(model.uid), size_vram: 0}))})
      },
      method: 'GET',
      path: '/api/ps',
      permission: 'models:list',
      summary: 'Ollama: the models loaded now (every running LLM and embedding model)',
      tag: 'ollama',
    },
    {
      body: showSchema,
      async handler({body, mayListModels, models}) {
        const model = models.get(body.model, {listRunning: mayListModels})
        const contextLength = model.description.context_length
        return json({
          capabilities: capabilitiesOf(model),
          details: detailsOf(model),
          license: '',
          model_info: {'general.architecture': model.modelName, ...(typeof contextLength === 'number' ? {'general.context_length': contextLength} : {})},
          modelfile: '',
          modified_at: entryOf(model).modified_at,
          parameters: '',
          template: '',
        })
      },
      example: {body: {model: 'tiny-random-llm'}},
      method: 'POST',
      path: '/api/show',
      permission: 'models:list',
      summary: "Ollama: a running model's details and capabilities",
      tag: 'ollama',
    },
  ]
  return routes
}
