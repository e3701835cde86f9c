/**
 * The kernel's own routes: model lifecycle, the catalogue, engines and service information. They use the
 * same RouteDefinition contract as plugin routes, so validation and the /docs document work the same way.
 */
import type {AccessControl} from '../../auth/access-control.js'
import type {ModelFamily} from '../../kernel/catalogue.js'
import type {RouteDefinition} from '../../kernel/contracts.js'
import type {Kernel} from '../../kernel/kernel.js'
import type {ModelRegistry} from '../../kernel/registry.js'
import type {ModelService} from '../../protocol/services.js'

import {parseFamily} from '../../kernel/catalogue.js'
import {notFound, ServiceError} from '../../kernel/errors.js'
import {PUBLIC} from '../../kernel/permissions.js'
import * as s from '../../kernel/schema.js'
import {booleanText} from '../../kernel/schema.js'
import {cachedModelListSchema} from '../../protocol/cache.js'
import {launchProgressSchema, launchReplySchema, launchSchema, memoryEstimateReplySchema, memoryEstimateSchema} from '../../protocol/launch.js'
import {modelDescriptionSchema, modelListSchema} from '../../protocol/models.js'
import {engineMatrixSchema, registeredFamilySchema, registrationListSchema} from '../../protocol/registrations.js'
import {authReplySchema, healthReplySchema, pluginsReplySchema, versionReplySchema} from '../../protocol/service-info.js'

export interface CoreRouteDependencies {
  kernel: Kernel
  registry: ModelRegistry
  supervisor: ModelService
  version: string
  /** Present when access control is on. */
  access?: AccessControl
}

const json = (body: unknown, status = 200) => ({body, kind: 'json' as const, status})
/** What routes that only act answer: a JSON `null`, as Xinference does. */
const NULL_REPLY = {type: 'null'}
const MODEL_VERSION = {description: 'A cached model version, as `GET /v1/cache/models` names it.', required: true, schema: {minLength: 1, type: 'string'}}
const cachedFilesSchema = s.object({model_version: s.string(), paths: s.array(s.string()), workers: s.array(s.string())}, {title: 'CachedModelFiles'})
const removedCacheSchema = s.object({model_version: s.string(), paths: s.array(s.string(), {description: 'What was deleted.'}), result: s.literal(true)}, {title: 'RemovedCache'})

const registerSchema = s.object(
  {
    model: s.union([s.string({minLength: 2}), s.record(s.unknown())], 'the model family as a JSON object, or as a JSON string of it (Xinference clients)'),
    persist: s.optional(s.boolean({description: 'Keep the registration across restarts (default true).'}), true),
    worker_ip: s.optional(s.nullable(s.string())),
  },
  {title: 'RegisterModelRequest'},
)

/** A yes/no query parameter (`?wait_ready=false`), checked against the route's declaration: its default when absent. */
const flag = (query: Record<string, string | string[] | undefined>, name: string, fallback: boolean) => (typeof query[name] === 'string' ? (booleanText(query[name]) ?? fallback) : fallback)

function familyOf(model: string | Record<string, unknown>): ModelFamily {
  return typeof model === 'string' ? parseFamily(model, '`model` is a string but', 'model') : (model as ModelFamily)
}

export function coreRoutes({access, kernel, registry, supervisor, version}: CoreRouteDependencies): RouteDefinition[] {
  const routes: Array<RouteDefinition<any>> = [
    {
      body: launchSchema,
      example: {body: {model_engine: 'llama.cpp', model_name: 'tiny-random-llm', model_type: 'LLM'}, query: {wait_ready: true}},
      async handler({authority, body, mayRegisterModels, modelScope, query, signal}) {
        // A key limited to some models may launch only under a uid it may then use.
        modelScope.require(body.model_uid ?? body.model_name)
        return json(await supervisor.launch(body, {authority, mayRegister: mayRegisterModels, signal, waitReady: flag(query, 'wait_ready', body.wait_ready ?? true)}))
      },
      method: 'POST',
      onArrival: () => supervisor.launchArriving(),
      path: '/v1/models',
      permission: 'models:start',
      query: {wait_ready: {description: 'Answer once the model is ready (default), or at once with false.', schema: {default: true, type: 'boolean'}}},
      response: launchReplySchema.json,
      summary:
        'Launch a model, downloading its weights on first use; answers {model_uid} once it is ready, or at once with ?wait_ready=false (then follow GET /v1/models/{uid}/progress)',
      tag: 'models',
    },
    {
      body: memoryEstimateSchema,
      example: {body: {context_length: 2048, model_engine: 'llama.cpp', model_name: 'tiny-random-llm'}},
      async handler({authority, body, signal}) {
        return json(await supervisor.estimateMemory(body, {authority, signal}))
      },
      method: 'POST',
      path: '/v1/models/memory',
      permission: 'models:list',
      response: memoryEstimateReplySchema.json,
      summary: 'Estimate the memory a launch needs (weights, KV cache at context_length, overhead) from the GGUF header, cached or on the hub',
      tag: 'cache',
    },
    {
      example: {params: {model_uid: 'tiny-random-llm'}},
      async handler({params}) {
        return json(supervisor.progress(params.model_uid))
      },
      method: 'GET',
      path: '/v1/models/:model_uid/progress',
      permission: 'models:list',
      response: launchProgressSchema.json,
      summary: "A launch's stage (pending, downloading, generating, installing, loading, ready, error, cancelled), progress from 0 to 1 and download bytes",
      tag: 'models',
    },
    {
      example: {params: {model_uid: 'tiny-random-llm'}},
      async handler({mayListModels, params}) {
        await supervisor.cancel(params.model_uid, {listRunning: mayListModels})
        return json(null)
      },
      method: 'POST',
      path: '/v1/models/:model_uid/cancel',
      permission: 'models:stop',
      response: NULL_REPLY,
      summary: 'Cancel a launch in progress; answers once no process and no partial download of it is left',
      tag: 'models',
    },
    {
      example: {query: {model_name: 'tiny-random-llm'}},
      async handler({query}) {
        const modelName = typeof query.model_name === 'string' && query.model_name ? query.model_name : undefined
        return json({list: await supervisor.cachedModels(modelName)})
      },
      method: 'GET',
      path: '/v1/cache/models',
      permission: 'models:list',
      query: {model_name: {description: 'Only the versions of this model.', schema: {type: 'string'}}},
      response: cachedModelListSchema.json,
      summary: 'Cached model versions with their size, path, hub, repo and files (?model_name= for one model)',
      tag: 'cache',
    },
    {
      example: {query: {model_version: 'tiny-random-llm--0_0001B--ggufv2--f32'}},
      async handler({query}) {
        const version = query.model_version as string
        const entries = (await supervisor.cachedModels()).filter((entry) => entry.model_version === version)
        if (entries.length === 0) throw notFound(`there is no cached model version named ${version}; \`servicectl cached\` lists them.`, 'not_found', 'model_version')
        return json({model_version: version, paths: entries.flatMap((entry) => entry.files.map((file) => file.path)), workers: entries.map((entry) => entry.worker)})
      },
      method: 'GET',
      path: '/v1/cache/models/files',
      permission: 'models:list',
      query: {model_version: MODEL_VERSION},
      response: cachedFilesSchema.json,
      summary: 'The files a cached model version has (what remove-cache would delete)',
      tag: 'cache',
    },
    {
      example: {query: {model_version: 'tiny-random-llm--0_0001B--ggufv2--f32'}},
      async handler({query}) {
        return json({...(await supervisor.removeCachedModel(query.model_version as string)), result: true})
      },
      method: 'DELETE',
      path: '/v1/cache/models',
      permission: 'admin',
      query: {model_version: MODEL_VERSION},
      response: removedCacheSchema.json,
      summary: 'Delete a cached model version (?model_version=); refused while a model running or launching uses it',
      tag: 'cache',
    },
    {
      async handler({modelScope}) {
        return json({data: supervisor.describeAll().filter((model) => modelScope.has(model.id)), object: 'list'})
      },
      method: 'GET',
      path: '/v1/models',
      permission: 'models:list',
      response: modelListSchema.json,
      summary: 'Running models (OpenAI list shape, with model type, engine, format, size, quantization and status)',
      tag: 'models',
    },
    {
      example: {params: {model_uid: 'tiny-random-llm'}},
      async handler({modelScope, params}) {
        modelScope.require(params.model_uid)
        return json(supervisor.describeModel(params.model_uid))
      },
      method: 'GET',
      path: '/v1/models/:model_uid',
      permission: 'models:list',
      response: modelDescriptionSchema.json,
      summary: 'One running model',
      tag: 'models',
    },
    {
      example: {params: {model_uid: 'tiny-random-llm'}},
      async handler({mayListModels, modelScope, params}) {
        modelScope.require(params.model_uid)
        await supervisor.terminate(params.model_uid, {listRunning: mayListModels})
        return json(null)
      },
      method: 'DELETE',
      path: '/v1/models/:model_uid',
      permission: 'models:stop',
      response: NULL_REPLY,
      summary: 'Terminate a model: its process exits and frees its memory',
      tag: 'models',
    },
    {
      example: {params: {model_type: 'LLM'}, query: {detailed: false}},
      async handler({params, query}) {
        const detailed = flag(query, 'detailed', false)
        return json(
          registry
            .list(params.model_type)
            .map((entry) => (detailed ? {...entry.family, is_builtin: entry.is_builtin} : {is_builtin: entry.is_builtin, model_name: entry.model_name})),
        )
      },
      method: 'GET',
      path: '/v1/model_registrations/:model_type',
      permission: 'models:list',
      query: {detailed: {description: 'Whole families instead of names.', schema: {default: false, type: 'boolean'}}},
      response: registrationListSchema.json,
      summary: 'Registered models of a type (?detailed=true for full families)',
      tag: 'registrations',
    },
    {
      body: registerSchema,
      example: {body: {model: {context_length: 2048, model_ability: ['chat', 'generate'], model_lang: ['en'], model_name: 'my-tiny-llm', model_specs: [{model_format: 'ggufv2', model_size_in_billions: '0_0001', model_src: {generated: {model_file_name_template: 'my-tiny-llm-{quantization}.gguf', model_id: 'tiny-random-llama', quantizations: ['f32']}}}], version: 2}, persist: false}, params: {model_type: 'LLM'}},
      async handler({authority, body, params}) {
        await registry.register(params.model_type, familyOf(body.model), {authority, persist: body.persist})
        return json(null)
      },
      method: 'POST',
      path: '/v1/model_registrations/:model_type',
      permission: 'models:register',
      response: NULL_REPLY,
      summary: 'Register a custom model (Xinference family JSON; model_uri may be file:///…)',
      tag: 'registrations',
    },
    {
      example: {params: {model_name: 'tiny-random-llm', model_type: 'LLM'}},
      async handler({params}) {
        const entry = registry.get(params.model_type, params.model_name)
        return json({...entry.family, is_builtin: entry.builtin})
      },
      method: 'GET',
      path: '/v1/model_registrations/:model_type/:model_name',
      permission: 'models:list',
      response: registeredFamilySchema.json,
      summary: 'One registered model family',
      tag: 'registrations',
    },
    {
      example: {params: {model_name: 'my-tiny-llm', model_type: 'LLM'}},
      async handler({mayListModels, params}) {
        // A running model would lose the registration its relaunches and restores read; Xinference refuses the same.
        const running = supervisor.describeAll().filter((model) => model.model_type === params.model_type && model.model_name === params.model_name)
        if (running.length > 0) {
          const which = mayListModels ? ` as ${running.map((model) => model.id).join(', ')}` : ''
          throw new ServiceError(409, 'conflict', `${params.model_name} is running${which}; terminate it (servicectl terminate <uid>) before you unregister it.`, 'model_name')
        }

        await registry.unregister(params.model_type, params.model_name)
        return json(null)
      },
      method: 'DELETE',
      path: '/v1/model_registrations/:model_type/:model_name',
      permission: 'models:unregister',
      response: NULL_REPLY,
      summary: 'Unregister a custom model',
      tag: 'registrations',
    },
    {
      example: {params: {model_name: 'tiny-random-llm'}},
      async handler({params}) {
        return json(await supervisor.engines(params.model_name))
      },
      method: 'GET',
      path: '/v1/engines/:model_name',
      permission: 'models:list',
      response: engineMatrixSchema.json,
      summary: 'Engines, formats, sizes and quantizations a model can be launched with',
      tag: 'registrations',
    },
    {
      async handler() {
        return json({
          engines: [...kernel.engines.values()].map((e) => ({formats: e.definition.formats, model_types: e.definition.modelTypes, name: e.definition.name, parameters: e.definition.parameters, plugin: e.plugin})),
          model_types: [...kernel.modelTypes.values()].map((t) => ({description: t.definition.description, name: t.definition.name, plugin: t.plugin})),
          plugins: kernel.plugins,
          problems: [...kernel.problems, ...registry.problems.map((message) => ({message, plugin: 'registrations'}))],
          registration_columns: Object.fromEntries(
            [...kernel.modelTypes.values()].flatMap(({definition}) => (definition.registrationColumns ? [[definition.name, definition.registrationColumns.map(([header, field]) => ({field, header}))]] : [])),
          ),
        })
      },
      method: 'GET',
      path: '/v1/cluster/plugins',
      permission: 'models:list',
      response: pluginsReplySchema.json,
      summary: 'Loaded plugins, their model types and engines, and any problems found while loading them',
      tag: 'service',
    },
    {
      async handler() {
        return json({version})
      },
      method: 'GET',
      path: '/v1/cluster/version',
      permission: PUBLIC,
      response: versionReplySchema.json,
      summary: 'Service version',
      tag: 'service',
    },
    {
      async handler() {
        return json({auth: access !== undefined})
      },
      method: 'GET',
      path: '/v1/cluster/auth',
      permission: PUBLIC,
      response: authReplySchema.json,
      summary: 'Whether access control is on',
      tag: 'service',
    },
    {
      async handler() {
        return json({status: 'ok'})
      },
      method: 'GET',
      path: '/health',
      permission: PUBLIC,
      response: healthReplySchema.json,
      summary: 'Liveness check',
      tag: 'service',
    },
  ]
  return routes
}
