/**
 * What workers and the supervisor say to each other over HTTP, besides the `WorkerApi` calls: a worker
 * registers (again after either side restarts) and then sends heartbeats. Routes that carry these are
 * `permission: 'cluster'`: with access control on, only a caller with the cluster token reaches them.
 */
import * as s from '../kernel/schema.js'

/** A worker is lost after `lostMs` without a heartbeat; heartbeats come every `heartbeatMs`. */
export interface ClusterTiming {
  heartbeatMs: number
  lostMs: number
}

export const workerResourcesSchema = s.object(
  {
    arch: s.optional(s.string({description: "Node's process.arch of the worker (x64, arm64), for the engines that run only on some.", maxLength: 32})),
    cpu_count: s.integer({minimum: 0}),
    gpus: s.array(
      s.object(
        {index: s.integer({minimum: 0}), memory_free_bytes: s.number({minimum: 0}), memory_total_bytes: s.number({minimum: 0}), name: s.string(), uuid: s.string()},
        {title: 'GpuDevice', unknownKeys: 'keep'},
      ),
    ),
    memory_free_bytes: s.number({minimum: 0}),
    memory_total_bytes: s.number({minimum: 0}),
    python: s.optional(s.nullable(s.string({description: 'The version of the Python the worker makes environments from; null when it has none.', maxLength: 32}))),
    platform: s.optional(s.string({description: "Node's process.platform of the worker (linux, darwin, win32).", maxLength: 32})),
  },
  {title: 'WorkerResources', unknownKeys: 'keep'},
)

export const registrationSchema = s.object(
  {
    address: s.string({description: "The worker server's base URL as the supervisor reaches it, e.g. http://10.0.0.2:41000.", pattern: /^https?:\/\/[^/]+$/}),
    instances: s.array(s.record(s.unknown()), {description: 'Models running on the worker, each with the launch it came from.'}),
    resources: workerResourcesSchema,
    version: s.string({minLength: 1}),
  },
  {title: 'WorkerRegistration'},
)

export const heartbeatSchema = s.object({address: s.string({description: 'The address the worker registered with.', minLength: 1}), instances: s.array(s.record(s.unknown())), resources: workerResourcesSchema}, {title: 'WorkerHeartbeat'})

export type Registration = s.Infer<typeof registrationSchema>
