/**
 * Xinference's autostart routes (`/v1/autostart/models`), mapped onto the models the service launches again after a
 * restart (SERVICE_HOME/desired-models.json). That list already holds every model that became ready and was not
 * terminated, so a running model is on it without being added; adding one that is not running launches it now, with
 * the caller's authority, as `POST /v1/models` would. Removing one leaves it running and only stops its restoring.
 * Xinference's retry settings (priority, max_retries, retry_interval_seconds) are accepted and not used: the service
 * relaunches each model once per restart, in the order they became ready.
 */
import type {RouteDefinition} from '../../kernel/contracts.js'
import type {ModelStatus} from '../../protocol/models.js'
import type {ModelService, RestoredModel, RestoredModels} from '../../protocol/services.js'

import {badRequest} from '../../kernel/errors.js'
import * as s from '../../kernel/schema.js'
import {launchSchema, MODEL_UID} from '../../protocol/launch.js'

export interface AutostartRouteDependencies {
  supervisor: ModelService
  restored: RestoredModels
}

const json = (body: unknown) => ({body, kind: 'json' as const})

const ENTRY_SETTINGS = ['enabled', 'priority', 'max_retries', 'retry_interval_seconds', 'state', 'launch'] as const
const unused = (name: string) => s.optional(s.integer({description: `Accepted for Xinference's clients, not used: ${name}.`, maximum: 1_000_000, minimum: 0}))

const entrySchema = s.object(
  {
    enabled: s.optional(s.boolean({description: 'Only true: a model on the list is always restored; remove it with DELETE /v1/autostart/models/{model_uid}.'})),
    launch: s.optional(launchSchema),
    max_retries: unused('each model is relaunched once per restart'),
    priority: unused('models are relaunched in the order they first became ready'),
    retry_interval_seconds: unused('each model is relaunched once per restart'),
    state: s.optional(s.record(s.unknown(), {description: 'Ignored: the state the service answers, sent back as Xinference clients may.'})),
  },
  {description: 'A launch request under `launch`, or its fields at the top level, as Xinference accepts both.', title: 'AutostartEntry', unknownKeys: 'keep'},
)

/** Xinference's summary of how each listed model stands, from the model's status now. */
const STANDING: Record<ModelStatus, string> = {error: 'error', launching: 'launching', ready: 'active', restarting: 'launching', terminating: 'waiting_model'}
const INSTANCE_STATUS: Record<ModelStatus, string> = {error: 'ERROR', launching: 'CREATING', ready: 'READY', restarting: 'CREATING', terminating: 'TERMINATING'}

/** Launch fields whose values may be credentials (an external engine's key): shown as Xinference shows them. */
const SECRET = /token|secret|password|passwd|api_?key|access_key|credential/i
const redacted = (launch: RestoredModel['launch']) => Object.fromEntries(Object.entries(launch).map(([key, value]) => [key, SECRET.test(key) ? '******' : value]))

const configSchema = s.object(
  {
    models: s.array(
      s.object(
        {
          enabled: s.literal(true),
          launch: s.record(s.unknown(), {description: 'The launch request restored, with the uid the model got.'}),
          state: s.object(
            {
              instance_status: s.optional(s.string({description: 'As GET /v1/models/instances shows it, while the model runs.'})),
              last_error: s.nullable(s.string({description: 'Why its last launch or restore failed.'})),
              status: s.string({description: 'active (running), launching, error, or inactive (not running: launched at the next start).'}),
            },
            {title: 'AutostartState'},
          ),
        },
        {title: 'AutostartModel'},
      ),
    ),
  },
  {title: 'AutostartConfig'},
)
const summarySchema = s.object({models: s.array(s.object({enabled: s.literal(true), model_uid: s.string()}, {title: 'AutostartSummaryEntry'}))}, {title: 'AutostartSummary'})

export function autostartRoutes({restored, supervisor}: AutostartRouteDependencies): RouteDefinition[] {
  const summary = () => ({models: restored.list().map((model) => ({enabled: true, model_uid: model.launch.model_uid}))})
  const config = () => {
    const running = new Map(supervisor.describeAll().map((model) => [model.id, model]))
    return {
      models: restored.list().map((model) => {
        const now = running.get(model.launch.model_uid)
        const state = {last_error: now?.error ?? model.last_error?.message ?? null, status: now ? STANDING[now.status] : 'inactive'}
        return {enabled: true, launch: redacted(model.launch), state: now ? {...state, instance_status: INSTANCE_STATUS[now.status]} : state}
      }),
    }
  }

  const routes: Array<RouteDefinition<any>> = [
    {
      async handler() {
        return json(config())
      },
      method: 'GET',
      path: '/v1/autostart/models',
      permission: 'models:start',
      response: configSchema.json,
      summary: 'The models launched again after a restart, with their launch requests (credentials hidden) and how each stands now',
      tag: 'models',
    },
    {
      async handler() {
        return json(summary())
      },
      method: 'GET',
      path: '/v1/autostart/models/summary',
      permission: 'models:list',
      response: summarySchema.json,
      summary: 'The uids of the models launched again after a restart',
      tag: 'models',
    },
    {
      body: entrySchema,
      example: {body: {launch: {model_engine: 'llama.cpp', model_name: 'tiny-random-llm', model_type: 'LLM'}}},
      async handler({authority, body, signal}) {
        if (body.enabled === false) throw badRequest('`enabled` can only be true: every model on the list is restored. Remove it with DELETE /v1/autostart/models/{model_uid} instead.', 'enabled')
        const flat = Object.fromEntries(Object.entries(body).filter(([key]) => !(ENTRY_SETTINGS as readonly string[]).includes(key)))
        if (body.launch === undefined && flat.model_name === undefined) throw badRequest('`launch` is required: the launch request (model_name, model_engine, …) of the model to restore.', 'launch')
        const {wait_ready: _waitReady, ...launch} = body.launch ?? launchSchema.parse(flat)
        const uid = launch.model_uid ?? launch.model_name
        // A running model is on the list already, with the launch it runs with: that one is what a restart restores.
        if (supervisor.describeAll().some((model) => model.id === uid)) return json(config())
        const {model_uid} = await supervisor.launch(launch, {authority, signal, waitReady: false})
        restored.add({...launch, model_uid})
        return json(config())
      },
      method: 'POST',
      path: '/v1/autostart/models',
      permission: 'models:start',
      response: configSchema.json,
      summary: 'Add a model to those launched again after a restart, launching it now unless it runs (a running model is on the list already)',
      tag: 'models',
    },
    {
      example: {params: {model_uid: 'tiny-random-llm'}},
      async handler({params}) {
        if (!MODEL_UID.test(params.model_uid)) throw badRequest('`model_uid` must be 1 to 100 letters, digits, `_`, `.` or `-`, starting with a letter or digit.', 'model_uid')
        restored.remove(params.model_uid)
        return json(summary())
      },
      method: 'DELETE',
      path: '/v1/autostart/models/:model_uid',
      permission: 'models:stop',
      response: summarySchema.json,
      summary: 'Stop launching a model again after a restart; it keeps running until terminated',
      tag: 'models',
    },
  ]
  return routes
}
