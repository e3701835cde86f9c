/**
 * A key's model scope in process (the service's own routes show the listings and chats, test/e2e/usage-quotas): what
 * a scoped key may launch, terminate and look up, through the app with the core routes and a stand-in supervisor.
 */
import {expect} from 'chai'

import type {ModelHandle, RouteDefinition} from '../../src/kernel/contracts.js'

import {AccessControl} from '../../src/auth/access-control.js'
import {parseAuthConfig} from '../../src/auth/config.js'
import {createApp} from '../../src/server/app.js'
import {listen, type Listening} from '../../src/server/listen.js'
import {coreRoutes} from '../../src/server/routes/core.js'
import {AUTH_SECRET} from '../helpers/auth.js'

const quiet = {debug() {}, error() {}, info() {}, warn() {}}
const SCOPED = 'sk-scoped0000001'
const WHOLE = 'sk-wholeuser0001'
const config = {
  auth_config: {secret_key: AUTH_SECRET, token_expire_in_minutes: 5},
  user_config: [
    {
      api_keys: [{key: SCOPED, models: ['tiny*'], name: 'scoped'}, WHOLE],
      password: 'pw',
      permissions: ['models:start', 'models:stop', 'models:list', 'models:read'],
      username: 'carol',
    },
  ],
}

const handle = (uid: string) => ({uid}) as ModelHandle
/** Answers the uids of the models a route's directory lists, and looks one up. */
const directoryRoute: RouteDefinition = {
  async handler({models, query}) {
    if (typeof query.uid === 'string') models.get(query.uid)
    return {body: models.list().map((model) => model.uid), kind: 'json'}
  },
  method: 'GET',
  path: '/test/models',
  permission: 'models:read',
  summary: 'lists the directory',
}

describe('model scope of a key', () => {
  let server: Listening
  const launched: string[] = []
  const terminated: string[] = []
  const call = async (key: string, method: string, path: string, body?: unknown) => {
    const response = await fetch(`${server.url}${path}`, {body: body === undefined ? undefined : JSON.stringify(body), headers: {authorization: `Bearer ${key}`, 'content-type': 'application/json'}, method})
    return {body: await response.json(), status: response.status}
  }

  before(async () => {
    const supervisor = {
      async launch(request: {model_name: string; model_uid?: string}) {
        launched.push(request.model_uid ?? request.model_name)
        return {model_uid: request.model_uid ?? request.model_name}
      },
      launchArriving: () => () => {},
      async terminate(uid: string) {
        terminated.push(uid)
      },
    }
    const routes = [...coreRoutes({kernel: undefined as never, registry: undefined as never, supervisor: supervisor as never, version: '0'}).filter((route) => route.path === '/v1/models' || route.path === '/v1/models/:model_uid'), directoryRoute]
    const models = {get: (uid: string) => handle(uid), list: () => ['tiny-a', 'big', 'tiny-b'].map(handle)}
    const app = createApp({access: new AccessControl(parseAuthConfig(config, 'auth.json')), log: quiet, models, routes: routes.map((definition) => ({definition, plugin: 'core'})), version: '0'})
    server = await listen(app, {host: '127.0.0.1', port: 0})
  })

  after(() => server.close())

  it('launches and terminates only under uids in the scope, naming the model and the scope otherwise', async () => {
    const refused = await call(SCOPED, 'POST', '/v1/models?wait_ready=false', {model_engine: 'llama.cpp', model_name: 'big', model_type: 'LLM'})
    expect(refused.status).to.equal(403)
    expect(refused.body.error).to.include({code: 'forbidden', param: 'model', type: 'permission_error'})
    expect(refused.body.error.message).to.equal(
      'the API key "scoped" of user "carol" may use only the models "tiny*", and not "big"; ask an administrator to add it to the key\'s models in the access-control config.',
    )
    expect((await call(SCOPED, 'POST', '/v1/models?wait_ready=false', {model_engine: 'llama.cpp', model_name: 'big', model_type: 'LLM', model_uid: 'tiny-big'})).status).to.equal(200)
    expect((await call(SCOPED, 'DELETE', '/v1/models/big')).status).to.equal(403)
    expect((await call(SCOPED, 'DELETE', '/v1/models/tiny-big')).status).to.equal(200)
    expect((await call(WHOLE, 'DELETE', '/v1/models/big')).status, 'the same user\'s other key has no scope').to.equal(200)
    expect({launched, terminated}).to.deep.equal({launched: ['tiny-big'], terminated: ['tiny-big', 'big']})
  })

  it("gives routes a directory of the scope's models only", async () => {
    expect((await call(SCOPED, 'GET', '/test/models')).body).to.deep.equal(['tiny-a', 'tiny-b'])
    expect((await call(WHOLE, 'GET', '/test/models')).body).to.deep.equal(['tiny-a', 'big', 'tiny-b'])
    expect((await call(SCOPED, 'GET', '/test/models?uid=big')).status).to.equal(403)
    expect((await call(SCOPED, 'GET', '/test/models?uid=tiny-a')).status).to.equal(200)
  })
})
