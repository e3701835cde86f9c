/**
 * The background build of an engine for this machine (src/service/engine-auto-builder.ts): its state, progress and
 * outcome, for `servicectl engine`, the web interface and anyone who wants to know whether models launched now get
 * the faster build. Reading it needs what listing models needs.
 */
import type {RouteDefinition} from '../../kernel/contracts.js'

import {type EngineBuildStatus, engineBuildStatusSchema} from '../../protocol/engine-build.js'

export function engineBuildRoutes(status: (engine: string) => Promise<EngineBuildStatus>): RouteDefinition[] {
  return [
    {
      async handler({params}) {
        return {body: await status(params.engine), kind: 'json', status: 200}
      },
      method: 'GET',
      path: '/v1/engines/:engine/build',
      permission: 'models:list',
      response: engineBuildStatusSchema.json,
      summary:
        "An engine's background build for this machine (llama.cpp: compiled for this CPU when the service starts on a machine that can build it): off, unavailable, checking, not_needed, building (stage, percent, lines), succeeded or failed (error, last lines)",
      tag: 'registrations',
    },
  ]
}
