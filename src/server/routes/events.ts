/**
 * What happened to models: each model's events (launch, download milestones, ready, crash, restart, terminate) and the
 * launch history Xinference keeps, at its route (`GET /v1/launch_history?model_name=`). Reading them needs what
 * reading the model list needs.
 */
import type {RouteDefinition} from '../../kernel/contracts.js'
import type {ModelEventSource} from '../../protocol/events.js'

import * as s from '../../kernel/schema.js'
import {launchRecordSchema, modelEventSchema} from '../../protocol/events.js'

const json = (body: unknown) => ({body, kind: 'json' as const, status: 200})

export function eventRoutes(source: ModelEventSource): RouteDefinition[] {
  return [
    {
      example: {params: {model_uid: 'tiny-random-llm'}},
      async handler({params}) {
        return json(source.events(params.model_uid))
      },
      method: 'GET',
      path: '/v1/models/:model_uid/events',
      permission: 'models:list',
      response: s.array(modelEventSchema).json,
      summary: "A model's events, oldest first: launch, download milestones, generating, installing (a Python environment), loading, ready, crash with reason, terminate (kept for a while after it ended)",
      tag: 'models',
    },
    {
      example: {query: {model_name: 'tiny-random-llm'}},
      async handler({query}) {
        return json(source.history(typeof query.model_name === 'string' && query.model_name ? query.model_name : undefined))
      },
      method: 'GET',
      path: '/v1/launch_history',
      permission: 'models:list',
      query: {model_name: {description: 'Only the launches of this model.', schema: {type: 'string'}}},
      response: s.array(launchRecordSchema).json,
      summary: 'Past and current launches, newest first (?model_name= for one model): engine, parameters, start, end and outcome; kept across restarts',
      tag: 'models',
    },
  ]
}
