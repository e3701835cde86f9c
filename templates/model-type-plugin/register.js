// @ts-check
/**
 * Registers the __MODEL_TYPE__ model type with service-toolkit: the type itself, its HTTP route, and a
 * reference engine with a demo model so that the route can be tried before a real engine exists.
 *
 * A model type owns the wire format of its routes and defines the operations its engines implement. Here
 * that is one operation, `infer`, declared with its payload and events as InferOperations below; every engine
 * that lists '__MODEL_TYPE__' in its modelTypes must implement it, and the type checker holds the route and the
 * engines to that one declaration.
 */
import {fileURLToPath, pathToFileURL} from 'node:url'

/** The kernel contract this plugin was written for; the service reports the plugin by name if it differs. */
const KERNEL_API_VERSION = 1

const MODEL_TYPE = '__MODEL_TYPE__'

/**
 * What the route sends to the engine's `infer` operation.
 * @typedef {{input: string}} InferPayload
 */

/**
 * What the engine's `infer` operation yields: one result (a streaming type would yield several events).
 * @typedef {{type: 'result', output: Record<string, unknown>}} InferEvent
 */

/**
 * The type's operations by name, each with what it takes and what it yields. Add one entry per operation.
 * @typedef {{infer: {payload: InferPayload, event: InferEvent}}} InferOperations
 */

/** @param {import('service-toolkit').KernelApi['schema']} s */
function inferSchema(s) {
  return s.object(
    {
      model: s.string({description: `Uid of a running ${MODEL_TYPE} model.`, minLength: 1}),
      input: s.string({description: 'What to run the model on.', minLength: 1}),
    },
    {title: `${MODEL_TYPE}InferRequest`},
  )
}

/**
 * `POST /v1/__SLUG__/infer`: runs the model's `infer` operation and answers with its output.
 * @param {import('service-toolkit').KernelApi} api
 * @returns {import('service-toolkit').RouteDefinition<import('service-toolkit').Infer<ReturnType<typeof inferSchema>>>}
 */
function inferRoute(api) {
  return {
    method: 'POST',
    path: '/v1/__SLUG__/infer',
    summary: `Run a ${MODEL_TYPE} model on an input`,
    tag: MODEL_TYPE,
    // Callers need this permission when access control is on; `models:read` is the one for inference.
    permission: 'models:read',
    // The body is validated before the handler runs; a mistake is a 400 that names the field.
    body: inferSchema(api.schema),
    // The answer's schema, for /openapi.json (and the clients generated from it); a streaming route also
    // declares `events`, the schema of each server-sent event, and a route that reads `?name=` declares `query`.
    response: api.schema.object(
      {object: api.schema.string(), model: api.schema.string(), output: api.schema.record(api.schema.unknown())},
      {title: `${MODEL_TYPE}InferResponse`},
    ).json,
    async handler({body, models, signal}) {
      // A 404 when there is no such model, listing the running ones to a caller who may list them; typed by this type's operations.
      /** @type {import('service-toolkit').ModelHandle<InferOperations>} */
      const model = models.get(body.model)
      if (model.modelType !== MODEL_TYPE)
        throw api.errors.badRequest(`model ${model.uid} is a ${model.modelType} model; this route runs ${MODEL_TYPE} models.`, 'model')

      for await (const {output, type} of model.invoke('infer', {input: body.input}, signal)) {
        if (type === 'result') return {kind: 'json', body: {object: '__SLUG__.result', model: model.uid, output}}
      }

      throw api.errors.create(500, 'internal_error', `model ${model.uid} ended without a result.`)
    },
  }
}

/** @type {import('service-toolkit').RegisterHook} */
const register = async ({api}) => {
  if (api.apiVersion !== KERNEL_API_VERSION)
    throw new Error(`__PLUGIN_NAME__ was written for kernel API ${KERNEL_API_VERSION}; this service has ${api.apiVersion}. Update the plugin.`)

  return {
    modelTypes: [
      {
        name: MODEL_TYPE,
        description: 'Describe what __MODEL_TYPE__ models do.',
        // What a model can be asked to do when its registration names no model_ability.
        defaultAbilities: ['infer'],
        // Columns of `servicectl registrations -t __MODEL_TYPE__` between Type and Is-built-in, as [header, family field].
        registrationColumns: [
          ['Name', 'model_name'],
          ['Description', 'model_description'],
        ],
        // Checks a registration (`servicectl register -t __MODEL_TYPE__ -f family.json`) before it is saved.
        validateFamily(family) {
          if (family.model_ability !== undefined && !Array.isArray(family.model_ability))
            throw api.errors.badRequest('model_ability must be an array such as ["infer"].', 'model_ability')
        },
      },
    ],
    routes: [inferRoute(api)],
    // The reference engine and its demo model; delete both once a real engine plugin serves this type.
    //   servicectl launch --model-name __SLUG__-demo
    //   curl -H 'Content-Type: application/json' -d '{"model": "__SLUG__-demo", "input": "hello world"}' http://127.0.0.1:9997/v1/__SLUG__/infer
    engines: [
      {
        name: '__SLUG__-reference',
        modelTypes: [MODEL_TYPE],
        formats: ['__SLUG__-reference'],
        parameters: {},
        hostModule: fileURLToPath(new URL('reference-host.js', import.meta.url)),
      },
    ],
    catalogue: [
      {
        modelType: MODEL_TYPE,
        families: [
          {
            model_name: '__SLUG__-demo',
            model_description: 'Demo model of the __MODEL_TYPE__ type, run by its reference engine.',
            model_ability: ['infer'],
            model_specs: [
              {
                model_format: '__SLUG__-reference',
                model_size_in_billions: 0,
                quantization: 'none',
                model_uri: pathToFileURL(fileURLToPath(new URL('demo-model.txt', import.meta.url))).href,
              },
            ],
          },
        ],
      },
    ],
  }
}

export default register
