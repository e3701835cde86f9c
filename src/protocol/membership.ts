/**
 * What workers and the supervisor say to each other over HTTP, besides the `WorkerApi` calls: a worker
 * registers (again after either side restarts) and then sends heartbeats. Routes that carry these are
 * `permission: 'cluster'`: with access control on, only a caller with the cluster token reaches them.
 */
import * as s from '../kernel/schema.js'

/** Environment variables that tune failure detection (seconds), so tests can run it fast. */
export const HEARTBEAT_INTERVAL_ENV = 'SERVICE_HEARTBEAT_INTERVAL'
export const LOST_TIMEOUT_ENV = 'SERVICE_WORKER_LOST_TIMEOUT'
export const CLUSTER_TOKEN_ENV = 'SERVICE_CLUSTER_TOKEN'

/** A worker is lost after this long without a heartbeat; heartbeats come every HEARTBEAT_INTERVAL. */
export interface ClusterTiming {
  heartbeatMs: number
  lostMs: number
}

export function clusterTiming(env: NodeJS.ProcessEnv = process.env): ClusterTiming {
  const seconds = (name: string, fallback: number) => {
    const value = Number(env[name])
    return Number.isFinite(value) && value > 0 ? value * 1000 : fallback * 1000
  }

  // Three heartbeats may go missing before a worker counts as lost: 3 s × 3 + 1 s of slack, within 15 s.
  return {heartbeatMs: seconds(HEARTBEAT_INTERVAL_ENV, 3), lostMs: seconds(LOST_TIMEOUT_ENV, 10)}
}

const resources = s.object(
  {
    cpu_count: s.integer({minimum: 0}),
    gpus: s.array(s.record(s.unknown())),
    memory_free_bytes: s.number({minimum: 0}),
    memory_total_bytes: s.number({minimum: 0}),
  },
  {title: 'WorkerResources', unknownKeys: 'keep'},
)

export const registrationSchema = s.object(
  {
    address: s.string({description: "The worker server's base URL as the supervisor reaches it, e.g. http://10.0.0.2:41000.", pattern: /^https?:\/\/[^/]+$/}),
    instances: s.array(s.record(s.unknown()), {description: 'Models running on the worker, each with the launch it came from.'}),
    resources,
    version: s.string({minLength: 1}),
  },
  {title: 'WorkerRegistration'},
)

export const heartbeatSchema = s.object({address: s.string({description: 'The address the worker registered with.', minLength: 1}), instances: s.array(s.record(s.unknown())), resources}, {title: 'WorkerHeartbeat'})

export type Registration = s.Infer<typeof registrationSchema>
