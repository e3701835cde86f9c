/**
 * Cluster routes of the supervisor: workers join and send heartbeats (`cluster`: the cluster token when access
 * control is on), admins see the workers and stop the whole cluster. In local mode the one in-process worker
 * is listed the same way, and there is nothing to join.
 */
import type {InstanceSummary, WorkerResources} from '../../protocol/worker.js'
import type {RouteDefinition} from '../../kernel/contracts.js'
import type {ModelService, WorkerAdmission} from '../../protocol/services.js'

import {type ClusterTiming, heartbeatSchema, registrationSchema} from '../../protocol/membership.js'
import {CLUSTER} from '../../kernel/permissions.js'
import * as s from '../../kernel/schema.js'
import {clusterInfoSchema, workerAdmissionSchema, workerListSchema} from '../../protocol/cluster.js'

const json = (body: unknown) => ({body, kind: 'json' as const})
const stopReplySchema = s.object({unreachable_workers: s.array(s.string(), {description: 'Workers that could not be told to stop.'})}, {title: 'StopClusterReply'})

export interface ClusterRouteDependencies {
  supervisor: ModelService
  version: string
  /** Present in cluster mode. */
  cluster?: {registry: WorkerAdmission; timing: ClusterTiming; stop(): void}
}

export function clusterRoutes({cluster, supervisor, version}: ClusterRouteDependencies): RouteDefinition[] {
  const routes: Array<RouteDefinition<any>> = [
    {
      async handler() {
        return json({list: supervisor.describeWorkers()})
      },
      method: 'GET',
      path: '/v1/cluster/workers',
      permission: 'admin',
      response: workerListSchema.json,
      summary: "Workers: address, version, state (ready or lost), resources, last heartbeat and the models each runs (GET /v1/workers answers Xinference's shape)",
      tag: 'cluster',
    },
    {
      async handler() {
        const workers = supervisor.describeWorkers()
        return json({
          heartbeat_interval_s: cluster ? cluster.timing.heartbeatMs / 1000 : null,
          lost_timeout_s: cluster ? cluster.timing.lostMs / 1000 : null,
          mode: cluster ? 'cluster' : 'local',
          models: supervisor.describeAll().length,
          // So `servicectl stop-cluster` can tell a person which process to stop when this is `service-local`.
          pid: process.pid,
          version,
          workers: {lost: workers.filter((w) => w.state === 'lost').length, ready: workers.filter((w) => w.state === 'ready').length},
        })
      },
      method: 'GET',
      path: '/v1/cluster/info',
      permission: 'admin',
      response: clusterInfoSchema.json,
      summary: "The cluster at a glance: mode, the supervisor's process id, version, workers ready and lost, models, failure-detection timing",
      tag: 'cluster',
    },
  ]
  if (!cluster) return routes
  routes.push(
    {
      body: registrationSchema,
      example: {body: {address: 'http://127.0.0.1:41000', instances: [], resources: {cpu_count: 8, gpus: [], memory_free_bytes: 8_000_000_000, memory_total_bytes: 16_000_000_000}, version: '0.1.0'}},
      async handler({body}) {
        return json(await cluster.registry.register(body))
      },
      method: 'POST',
      path: '/v1/cluster/workers',
      permission: CLUSTER,
      response: workerAdmissionSchema.json,
      summary: 'A worker joins (or joins again) with its address, version, resources and running models',
      tag: 'cluster',
    },
    {
      body: heartbeatSchema,
      example: {body: {address: 'http://127.0.0.1:41000', instances: [], resources: {cpu_count: 8, gpus: [], memory_free_bytes: 8_000_000_000, memory_total_bytes: 16_000_000_000}}},
      async handler({body}) {
        cluster.registry.heartbeat(body.address, body.resources as WorkerResources, body.instances as unknown as InstanceSummary[])
        return json(null)
      },
      method: 'POST',
      path: '/v1/cluster/workers/heartbeat',
      permission: CLUSTER,
      response: {type: 'null'},
      summary: "A worker's heartbeat with its resources and models; 404 worker_not_registered asks it to register again",
      tag: 'cluster',
    },
    {
      async handler({log}) {
        const unreachable = await cluster.registry.shutdownWorkers()
        log.info(`stop-cluster: workers told to stop${unreachable.length > 0 ? ` (unreachable: ${unreachable.join(', ')})` : ''}; the supervisor stops next`)
        // Answer first, then stop: the caller learns the outcome before the supervisor goes away.
        setImmediate(cluster.stop)
        return json({unreachable_workers: unreachable})
      },
      method: 'POST',
      path: '/v1/cluster/stop',
      permission: 'admin',
      response: stopReplySchema.json,
      summary: 'Stop the cluster: every worker ends its models and exits, then the supervisor exits',
      tag: 'cluster',
    },
  )
  return routes
}
