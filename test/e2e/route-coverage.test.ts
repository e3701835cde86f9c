/**
 * Route coverage of a cluster with access control on (in the manner of LocalAI's route_coverage_test.go): a real
 * supervisor with `--auth-config` and a cluster token, and a real worker. Every operation of the supervisor's
 * OpenAPI document (core, plugin and cluster routes) declares its permission and is called anonymously, with a
 * wrong key, as users lacking the permission, and with the least permission that passes; every route on the
 * worker's own port needs the cluster token, which no user credential replaces. Path parameters are dummies and
 * bodies empty, so a caller let through gets some other answer (400, 404, …) than 401 or 403; a route added
 * later is covered without a change here. service-local's routes get the same sweep, and every kind of bad
 * credential, in access-control.test.ts.
 */
import {expect} from 'chai'

import {PERMISSIONS} from '../../src/kernel/permissions.js'
import {engineBuildRoutes} from '../../src/server/routes/engine-build.js'
import {workerRoutes} from '../../src/service/worker-routes.js'
import {apiKeyOf, writeTestAuthConfig} from '../helpers/auth.js'
import {type RunningService, startProgram, temporaryDirectory} from '../helpers/service.js'

const CLUSTER_TOKEN = 'route-coverage-cluster-token-0123456789'
const WRONG_KEY = 'sk-0000000000000'
/** Answered last, since the caller it lets through stops the service. */
const STOPPING = new Set(['POST /v1/cluster/stop', 'POST /v1/worker/shutdown'])

interface Operation {
  method: string
  path: string
  permission: string
  hasBody: boolean
}

const stoppingLast = (a: Operation, b: Operation) => Number(STOPPING.has(`${a.method} ${a.path}`)) - Number(STOPPING.has(`${b.method} ${b.path}`))

async function call(url: string, operation: Operation, credential?: string): Promise<{status: number; error?: {code?: string; message: string}}> {
  const response = await fetch(`${url}${operation.path.replaceAll(/\{\w+\}|:\w+/g, 'ghost')}`, {
    body: operation.hasBody ? '{}' : undefined,
    headers: {'content-type': 'application/json', ...(credential ? {authorization: `Bearer ${credential}`} : {})},
    method: operation.method,
  })
  const text = await response.text()
  const error = response.headers.get('content-type')?.includes('json') ? JSON.parse(text)?.error : undefined
  // Ollama's routes answer the message itself as `error`, as its clients read it.
  return {error: typeof error === 'string' ? {message: error} : error, status: response.status}
}

describe('route coverage of a cluster with access control on', function () {
  let supervisor: RunningService
  let worker: RunningService
  let operations: Operation[]

  before(async () => {
    supervisor = await startProgram('service-supervisor', ['-H', '127.0.0.1', '-p', '0', '--auth-config', await writeTestAuthConfig(await temporaryDirectory()), '--cluster-token', CLUSTER_TOKEN])
    worker = await startProgram('service-worker', ['-e', supervisor.url, '-H', '127.0.0.1', '--cluster-token', CLUSTER_TOKEN])
    const document = await (await fetch(`${supervisor.url}/openapi.json`)).json()
    operations = Object.entries(document.paths as Record<string, Record<string, {'x-permission'?: string; requestBody?: unknown}>>)
      .flatMap(([path, byMethod]) =>
        Object.entries(byMethod).map(([method, operation]) => ({hasBody: operation.requestBody !== undefined, method: method.toUpperCase(), path, permission: operation['x-permission'] ?? '(none)'})),
      )
      .sort(stoppingLast)
  })

  after(async () => {
    await worker?.stop()
    await supervisor?.stop()
  })

  it("declares a permission on every operation of the supervisor's document, plugin routes included", () => {
    const names = operations.map((operation) => `${operation.method} ${operation.path}`)
    expect(names).to.include.members(['POST /v1/chat/completions', 'POST /v1/images/generations', 'POST /v1/audio/transcriptions', 'POST /v1/cluster/workers', 'GET /metrics'])
    for (const operation of operations) expect([...PERMISSIONS, 'public', 'cluster', 'authenticated'], `${operation.method} ${operation.path}`).to.include(operation.permission)
  })

  it("lets no caller but a cluster member reach the worker's own port", async () => {
    const routes = [
      ...workerRoutes({onShutdown() {}, version: '0', worker: () => expect.fail('not called')}),
      ...engineBuildRoutes({all: async () => [], status: async () => expect.fail('not called')}, 'cluster'),
    ].map(({body, method, path, permission}) => ({hasBody: body !== undefined, method, path, permission: permission ?? '(none)'}))
    expect(routes.map((route) => `${route.method} ${route.path}`)).to.include.members(['GET /v1/engine-builds', 'GET /v1/engines/:engine/build', 'POST /v1/worker/instances'])
    for (const route of routes.sort(stoppingLast)) {
      const where = `${route.method} ${route.path} on the worker`
      expect(route.permission, where).to.equal('cluster')
      for (const credential of [undefined, WRONG_KEY, apiKeyOf('root')]) expect((await call(worker.url, route, credential)).status, `${where} with ${credential ?? 'nothing'}`).to.equal(401)
      expect((await call(worker.url, route, CLUSTER_TOKEN)).status, `${where} with the cluster token`).not.to.be.oneOf([401, 403])
    }
  })

  it('answers every operation of the supervisor by its permission: 401 anonymous or with a wrong key, 403 naming it without it, through with it', async () => {
    for (const operation of operations) {
      const where = `${operation.method} ${operation.path}`
      const {permission} = operation
      if (permission === 'public') {
        const anonymous = await call(supervisor.url, operation)
        expect(anonymous.status, where).not.to.equal(403)
        expect(anonymous.error?.message ?? '', where).not.to.match(/^this service has access control on/)
        continue
      }

      for (const credential of [undefined, WRONG_KEY]) expect((await call(supervisor.url, operation, credential)).status, `${where} with ${credential ?? 'nothing'}`).to.equal(401)
      if (permission === 'cluster') {
        expect((await call(supervisor.url, operation, apiKeyOf('root'))).status, `${where} as admin`).to.equal(401)
        expect((await call(supervisor.url, operation, CLUSTER_TOKEN)).status, `${where} with the cluster token`).not.to.be.oneOf([401, 403])
        continue
      }

      expect((await call(supervisor.url, operation, CLUSTER_TOKEN)).status, `${where} with the cluster token`).to.equal(401)
      if (permission === 'authenticated') {
        expect((await call(supervisor.url, operation, apiKeyOf('nobody'))).status, `${where} as nobody`).not.to.be.oneOf([401, 403])
        continue
      }

      for (const username of permission === 'admin' ? ['nobody', ...PERMISSIONS.filter((p) => p !== 'admin').map((p) => `only-${p}`)] : ['nobody', `all-but-${permission}`]) {
        const refused = await call(supervisor.url, operation, apiKeyOf(username))
        expect(refused.status, `${where} as ${username}`).to.equal(403)
        expect(refused.error?.message, `${where} as ${username}`).to.contain(`does not have the permission ${permission}`)
      }

      const least = permission === 'admin' ? 'root' : `only-${permission}`
      expect((await call(supervisor.url, operation, apiKeyOf(least))).status, `${where} as ${least}`).not.to.be.oneOf([401, 403])
    }
  })
})
