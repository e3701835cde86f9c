/**
 * The background build of an engine for this machine (src/service/engine-auto-builder.ts): its state, progress and
 * outcome, for `servicectl engine`, the web interface and anyone who wants to know whether models launched now get
 * the faster build. Reading it needs what listing models needs; on a worker's own port, the cluster token like its
 * other routes.
 */
import type {RouteDefinition} from '../../kernel/contracts.js'
import type {CLUSTER, Permission} from '../../kernel/permissions.js'

import {type EngineBuildStatus, engineBuildListSchema, engineBuildStatusSchema} from '../../protocol/engine-build.js'

/** The builds of a service that runs models; a supervisor has none. */
export interface EngineBuilds {
  status(engine: string): Promise<EngineBuildStatus>
  all(): Promise<EngineBuildStatus[]>
}

export function engineBuildRoutes(builds: EngineBuilds | undefined, permission: Permission | typeof CLUSTER = 'models:list'): RouteDefinition[] {
  const list: RouteDefinition = {
    async handler() {
      return {body: {data: builds ? await builds.all() : []}, kind: 'json', status: 200}
    },
    method: 'GET',
    path: '/v1/engine-builds',
    permission,
    response: engineBuildListSchema.json,
    summary:
      "Every engine this service builds for its machine in the background, with each build's state as GET /v1/engines/{engine}/build answers it; an empty list on a supervisor (its workers build, each for its own machine)",
    tag: 'registrations',
  }
  if (!builds) return [list]
  return [
    list,
    {
      example: {params: {engine: 'llama.cpp'}},
      async handler({params}) {
        return {body: await builds.status(params.engine), kind: 'json', status: 200}
      },
      method: 'GET',
      path: '/v1/engines/:engine/build',
      permission,
      response: engineBuildStatusSchema.json,
      summary:
        "An engine's background build for this machine (llama.cpp: its portable build, compiled when the service starts on a machine that can build it): off, unavailable, checking, not_needed, building (stage, percent, lines), succeeded or failed (error, last lines)",
      tag: 'registrations',
    },
  ]
}
