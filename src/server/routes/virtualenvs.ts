/** `GET /v1/virtualenvs` and `DELETE /v1/virtualenvs/{name}`: the Python environments engines run in, for administrators. */
import type {RouteDefinition} from '../../kernel/contracts.js'
import {type VirtualEnvironmentService, virtualEnvironmentListSchema, virtualEnvironmentRemovalSchema} from '../../protocol/virtualenvs.js'

export function virtualEnvironmentRoutes(service: VirtualEnvironmentService): RouteDefinition[] {
  return [
    {
      async handler() {
        return {body: {list: await service.virtualEnvironments()}, kind: 'json'}
      },
      method: 'GET',
      path: '/v1/virtualenvs',
      permission: 'admin',
      response: virtualEnvironmentListSchema.json,
      summary: 'The Python virtual environments of engines that run Python, on every worker: packages, size, and the models using each',
      tag: 'virtualenvs',
    },
    {
      example: {params: {name: 'transformers'}},
      async handler({params}) {
        return {body: {...(await service.removeVirtualEnvironment(params.name)), result: true}, kind: 'json'}
      },
      method: 'DELETE',
      path: '/v1/virtualenvs/:name',
      permission: 'admin',
      response: virtualEnvironmentRemovalSchema.json,
      summary: 'Delete a Python virtual environment; refused while a model running or launching uses it (the next launch that needs it makes it again)',
      tag: 'virtualenvs',
    },
  ]
}
