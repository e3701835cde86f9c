/**
 * Routes Xinference's clients call that the service's own API answers elsewhere or in another shape: engines by
 * model type, model instances, the workers, the supervisor's address, and the requests a caller named with `request_id` (their
 * progress, and aborting one). Each answers in Xinference's shape from the same state the service's own routes show.
 */
import type {RouteDefinition} from '../../kernel/contracts.js'
import type {ModelStatus} from '../../protocol/models.js'
import type {ModelService} from '../../protocol/services.js'
import type {NamedRequests} from '../named-requests.js'

import {notFound} from '../../kernel/errors.js'
import * as s from '../../kernel/schema.js'
import {engineMatrixSchema} from '../../protocol/registrations.js'

export interface XinferenceRouteDependencies {
  supervisor: ModelService
  namedRequests: NamedRequests
}

const json = (body: unknown) => ({body, kind: 'json' as const})

/** Xinference's instance statuses, which its CLI polls until READY, ERROR or TERMINATED. */
const INSTANCE_STATUS: Record<ModelStatus, string> = {error: 'ERROR', launching: 'CREATING', ready: 'READY', restarting: 'CREATING', terminating: 'TERMINATING'}

const instanceSchema = s.object(
  {
    instance_created_ts: s.integer({description: 'Seconds since the epoch when it was launched.'}),
    model_ability: s.array(s.string()),
    model_name: s.string(),
    model_uid: s.string(),
    model_version: s.string({description: 'Name, format, size and quantization, as Xinference joins them.'}),
    n_worker: s.literal(1),
    replica: s.integer({minimum: 1}),
    replica_statuses: s.array(
      s.object({error_message: s.nullable(s.string()), replica_model_uid: s.string(), status: s.string(), worker_address: s.string()}, {title: 'ReplicaStatus'}),
    ),
    status: s.string({enum: Object.values(INSTANCE_STATUS)}),
  },
  {title: 'ModelInstance'},
)

export function xinferenceRoutes({namedRequests, supervisor}: XinferenceRouteDependencies): RouteDefinition[] {
  const routes: Array<RouteDefinition<any>> = [
    {
      async handler({params}) {
        return json(await supervisor.engines(params.model_name, params.model_type))
      },
      example: {params: {model_name: 'tiny-random-llm', model_type: 'LLM'}},
      method: 'GET',
      path: '/v1/engines/:model_type/:model_name',
      permission: 'models:list',
      response: engineMatrixSchema.json,
      summary: 'Engines, formats, sizes and quantizations a model of that type can be launched with (as GET /v1/engines/{model_name})',
      tag: 'registrations',
    },
    {
      async handler({modelScope, query}) {
        const wanted = (name: string) => (typeof query[name] === 'string' && query[name] !== '' ? query[name] : undefined)
        const [modelName, modelUid] = [wanted('model_name'), wanted('model_uid')]
        const instances = supervisor
          .describeAll()
          .filter((model) => modelScope.has(model.id) && (modelName === undefined || model.model_name === modelName) && (modelUid === undefined || model.id === modelUid))
          .sort((a, b) => a.id.localeCompare(b.id))
          .map((model) => ({
            instance_created_ts: model.created,
            model_ability: model.model_ability,
            model_name: model.model_name,
            model_uid: model.id,
            model_version: [model.model_name, model.model_format, model.model_size_in_billions, model.quantization].join('--'),
            n_worker: 1,
            replica: model.replica,
            replica_statuses: model.replicas.map((replica) => ({error_message: model.error ?? null, replica_model_uid: replica.model_uid, status: INSTANCE_STATUS[model.status], worker_address: replica.worker})),
            status: INSTANCE_STATUS[model.status],
          }))
        return json(instances)
      },
      example: {query: {model_name: 'tiny-random-llm', model_uid: 'tiny-random-llm'}},
      method: 'GET',
      path: '/v1/models/instances',
      permission: 'models:list',
      query: {model_name: {description: 'Only instances of this model.', schema: {type: 'string'}}, model_uid: {description: 'Only this instance.', schema: {type: 'string'}}},
      response: s.array(instanceSchema).json,
      summary: "Running and launching models as Xinference's instances: status (CREATING, READY, ERROR, TERMINATING) and replicas",
      tag: 'models',
    },
    {
      async handler({headers}) {
        const models = supervisor.describeAll()
        return json(
          supervisor.describeWorkers().map((worker) => ({
            models: Object.fromEntries(models.flatMap((model) => model.replicas.filter((replica) => replica.worker === worker.id).map((replica) => [replica.model_uid, model]))),
            // service-local's own worker is the service itself, as Xinference's local mode has its worker at the supervisor's address.
            'work-ip': worker.address ?? headers.host ?? worker.id,
          })),
        )
      },
      method: 'GET',
      path: '/v1/workers',
      permission: 'admin',
      response: s.array(
        s.object(
          {models: s.record(s.record(s.unknown()), {description: 'What runs there, by instance uid: the description GET /v1/models/{model_uid} answers.'}), 'work-ip': s.string({description: "The worker's address."})},
          {title: 'XinferenceWorker'},
        ),
      ).json,
      summary: "Workers as Xinference's get_workers_info() reads them: address and the models each runs (GET /v1/cluster/workers has the service's own description)",
      tag: 'cluster',
    },
    {
      async handler({headers}) {
        return json({supervisor_ip: headers.host ?? ''})
      },
      method: 'GET',
      path: '/v1/supervisor',
      permission: 'admin',
      response: s.object({supervisor_ip: s.string({description: 'The address this request reached the service at.'})}, {title: 'SupervisorInfo'}).json,
      summary: "The supervisor's address, as Xinference's get_supervisor_info() reads it",
      tag: 'cluster',
    },
    {
      async handler({params}) {
        const progress = namedRequests.progress(params.request_id)
        if (progress === undefined)
          throw notFound(`no request with request_id "${params.request_id}" is running or has finished lately; send the request with that request_id first.`, 'not_found', 'request_id')
        return json({progress})
      },
      example: {params: {request_id: 'my-request-1'}},
      method: 'GET',
      path: '/v1/requests/:request_id/progress',
      permission: 'models:read',
      response: s.object({progress: s.number({description: '0 while the request runs, 1 once it has finished.', maximum: 1, minimum: 0})}, {title: 'RequestProgress'}).json,
      summary: 'How far a request named with request_id is: 0 while it runs, 1 once finished',
      tag: 'LLM',
    },
    {
      body: s.object(
        {block_duration: s.optional(s.integer({description: 'Seconds for which a request with this id is refused afterwards (default 30), so an abort that arrives first still stops it.', maximum: 3600, minimum: 0}), 30)},
        {title: 'AbortRequest'},
      ),
      async handler({body, models, params}) {
        models.get(params.model_uid)
        return json({msg: namedRequests.abort(params.model_uid, params.request_id, body.block_duration ?? 30)})
      },
      example: {body: {}, params: {model_uid: 'tiny-random-llm', request_id: 'my-request-1'}},
      method: 'POST',
      path: '/v1/models/:model_uid/requests/:request_id/abort',
      permission: 'models:read',
      response: s.object({msg: s.string({description: 'DONE when a running request was stopped, NOT_FOUND when none of that id runs on that model.', enum: ['DONE', 'NOT_FOUND']})}, {title: 'AbortReply'}).json,
      summary: 'Stop a running request named with request_id (chat, completions), and refuse that id for block_duration seconds',
      tag: 'LLM',
    },
  ]
  return routes
}
