/**
 * A model's events (`GET /v1/models/{uid}/events`) and the launch history (`GET /v1/launch_history`): one
 * schema each gives the routes' OpenAPI document and the types the service and the client share.
 */
import * as s from '../kernel/schema.js'

/**
 * `restart` is a self-healing relaunch of a crashed model (src/cluster/self-healing.ts); `unload` is the service
 * stopping an idle model, or one evicted for room, which a request launches again (src/cluster/on-demand.ts).
 */
export const MODEL_EVENT_KINDS = ['launch', 'download', 'generating', 'installing', 'loading', 'ready', 'launch_failed', 'cancelled', 'crash', 'restart', 'terminate', 'unload'] as const
export type ModelEventKind = (typeof MODEL_EVENT_KINDS)[number]

export const modelEventSchema = s.object(
  {
    details: s.record(s.unknown(), {description: 'What the event is about: a launch its engine, format, size, quantization and workers; a download its bytes; a crash its reason.'}),
    event_content: s.string({description: 'The event in a sentence (as Xinference reports it).'}),
    event_ts: s.integer({description: 'Seconds since the epoch (as Xinference reports it).'}),
    event_type: s.string({description: 'Its level (as Xinference reports it).', enum: ['INFO', 'WARNING', 'ERROR']}),
    kind: s.string({enum: MODEL_EVENT_KINDS}),
    timestamp: s.integer({description: 'Milliseconds since the epoch.'}),
  },
  {title: 'ModelEvent'},
)
export type ModelEvent = s.Infer<typeof modelEventSchema> & {kind: ModelEventKind; event_type: 'ERROR' | 'INFO' | 'WARNING'}

/** How a launch ended; `running` while it lasts, `stopped` when the service stopped with it running. */
export const LAUNCH_OUTCOMES = ['launching', 'running', 'terminated', 'crashed', 'failed', 'cancelled', 'stopped'] as const

export const launchRecordSchema = s.object(
  {
    data: s.record(s.unknown(), {description: "The launch's format, size, quantization, replicas, workers and engine parameters."}),
    ended: s.nullable(s.integer({description: 'Milliseconds since the epoch; null while it runs.'})),
    model_engine: s.nullable(s.string()),
    model_name: s.string(),
    model_type: s.string(),
    model_uid: s.string(),
    outcome: s.string({enum: LAUNCH_OUTCOMES}),
    reason: s.nullable(s.string({description: 'Why it failed, crashed or was cancelled.'})),
    started: s.integer({description: 'Milliseconds since the epoch.'}),
  },
  {title: 'LaunchRecord'},
)
export type LaunchRecord = s.Infer<typeof launchRecordSchema> & {outcome: (typeof LAUNCH_OUTCOMES)[number]}

/** What the events routes need of the service. */
export interface ModelEventSource {
  /** Oldest first; a model that has none (never launched, or forgotten) is a 404. */
  events(uid: string): ModelEvent[]
  /** Newest first, optionally of one model name. */
  history(modelName?: string): LaunchRecord[]
}
