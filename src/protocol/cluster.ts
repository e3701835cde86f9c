// Wire types of the cluster routes; see launch.ts for why they live in src/protocol/.
import * as s from '../kernel/schema.js'

import {workerResourcesSchema} from './membership.js'

/** `GET /v1/cluster/info`: the cluster at a glance. */
export const clusterInfoSchema = s.object(
  {
    heartbeat_interval_s: s.nullable(s.number({description: 'Seconds between heartbeats; null in local mode.'})),
    lost_timeout_s: s.nullable(s.number({description: 'Seconds without a heartbeat before a worker is lost; null in local mode.'})),
    mode: s.string({description: '`local`: one `service-local` process; `cluster`: a supervisor with workers.', enum: ['local', 'cluster']}),
    models: s.integer({minimum: 0}),
    pid: s.integer({description: 'The process id of `service-local` or the supervisor.'}),
    version: s.string(),
    workers: s.object({lost: s.integer({minimum: 0}), ready: s.integer({minimum: 0})}),
  },
  {title: 'ClusterInfo'},
)

export type ClusterInfo = s.Infer<typeof clusterInfoSchema> & {mode: 'local' | 'cluster'}

/** `GET /v1/cluster/workers`: each worker as the supervisor sees it, with the uids of the models it runs. */
export const workerListSchema = s.object(
  {
    list: s.array(
      s.object(
        {
          address: s.nullable(s.string({description: "The worker server's base URL; null for service-local's own worker."})),
          id: s.string(),
          last_seen: s.integer({description: 'Milliseconds since the epoch of the last sign of life (a heartbeat or a registration).'}),
          models: s.array(s.string(), {description: 'Uids of the models it runs.'}),
          resources: workerResourcesSchema,
          state: s.string({enum: ['ready', 'lost']}),
          version: s.string(),
        },
        {title: 'WorkerDescription'},
      ),
    ),
  },
  {title: 'WorkerList'},
)

/** `POST /v1/cluster/workers`'s answer: the worker's id and the timing its heartbeats keep to. */
export const workerAdmissionSchema = s.object(
  {heartbeat_interval_ms: s.integer({minimum: 1}), lost_timeout_ms: s.integer({minimum: 1}), worker_id: s.string()},
  {title: 'WorkerAdmission'},
)

export type WorkerAdmissionReply = s.Infer<typeof workerAdmissionSchema>
