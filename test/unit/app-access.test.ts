/**
 * The app's access control in process, for what the service's own routes cannot show: routes under
 * /anthropic (credentials in `x-api-key`, errors in Anthropic's shape, driven by Anthropic's SDK), and an app
 * with access control off.
 */
import Anthropic from '@anthropic-ai/sdk'
import {expect} from 'chai'

import type {RouteDefinition} from '../../src/kernel/contracts.js'

import {AccessControl} from '../../src/auth/access-control.js'
import {parseAuthConfig} from '../../src/auth/config.js'
import {type AppOptions, createApp} from '../../src/server/app.js'
import {listen, type Listening} from '../../src/server/listen.js'
import {authRoutes} from '../../src/server/routes/auth.js'
import {coreRoutes} from '../../src/server/routes/core.js'
import {apiKeyOf, passwordOf, testAuthConfig} from '../helpers/auth.js'

const quiet = {debug() {}, error() {}, info() {}, warn() {}}
const message = {content: [{text: 'Hello', type: 'text'}], id: 'msg_1', model: 'tiny', role: 'assistant', stop_reason: 'end_turn', stop_sequence: null, type: 'message', usage: {input_tokens: 1, output_tokens: 1}}
const messagesRoute: RouteDefinition = {
  async handler() {
    return {body: message, kind: 'json'}
  },
  method: 'POST',
  path: '/anthropic/v1/messages',
  permission: 'models:read',
  summary: 'Anthropic Messages API (stand-in)',
}
/** Only the routes that need neither a kernel nor a supervisor: logins, as access control is on or off, and whether it is. */
const loginRoutes = (access?: AccessControl) => [
  ...authRoutes(access).filter((route) => route.path === '/token'),
  ...coreRoutes({kernel: undefined as never, registry: undefined as never, supervisor: undefined as never, version: '0.0.0'}).filter((route) => route.path === '/v1/cluster/auth'),
]

async function serve(access?: AccessControl, routes: RouteDefinition[] = [messagesRoute]): Promise<Listening> {
  const options: AppOptions = {access, log: quiet, models: {get: () => expect.fail('no models here')}, routes: routes.map((definition) => ({definition, plugin: 'test'})), version: '0.0.0'}
  return listen(createApp(options), {host: '127.0.0.1', port: 0})
}

describe('app access control', () => {
  describe('under /anthropic', () => {
    let server: Listening
    const anthropic = (options: {apiKey?: string; authToken?: string}) => new Anthropic({apiKey: null, ...options, baseURL: `${server.url}/anthropic`, maxRetries: 0})
    const ask = (client: Anthropic) => client.messages.create({max_tokens: 8, messages: [{content: 'Hi', role: 'user'}], model: 'tiny'})

    before(async () => {
      server = await serve(new AccessControl(parseAuthConfig(testAuthConfig(), 'auth.json')))
    })

    after(() => server.close())

    it("accepts Anthropic's client with the key in x-api-key, or as a bearer token", async () => {
      expect((await ask(anthropic({apiKey: apiKeyOf('only-models:read')}))).content).to.deep.equal(message.content)
      expect((await ask(anthropic({authToken: apiKeyOf('only-models:read')}))).id).to.equal('msg_1')
    })

    it("answers 401 and 403 in Anthropic's error shape, which its client turns into its own errors", async () => {
      const unknown = await ask(anthropic({apiKey: 'sk-0000000000000'})).catch((error) => error)
      expect(unknown).to.be.instanceOf(Anthropic.AuthenticationError)
      expect(unknown.error).to.deep.equal({error: {message: 'the API key is not valid for this service.', type: 'authentication_error'}, type: 'error'})
      const lacking = await ask(anthropic({apiKey: apiKeyOf('only-models:list')})).catch((error) => error)
      expect(lacking).to.be.instanceOf(Anthropic.PermissionDeniedError)
      expect(lacking.error.error.type).to.equal('permission_error')

      const anonymous = await fetch(`${server.url}/anthropic/v1/messages`, {body: '{}', method: 'POST'})
      expect(anonymous.status).to.equal(401)
      expect((await anonymous.json()).error.message).to.match(/^this service has access control on: send `x-api-key: <API key>`, or `Authorization: Bearer/)
    })
  })

  describe('when off', () => {
    let server: Listening

    before(async () => {
      server = await serve(undefined, [messagesRoute, ...loginRoutes()])
    })

    after(() => server.close())

    it('ignores credentials, says auth is off, and answers a login with why it is not needed', async () => {
      const open = await fetch(`${server.url}/anthropic/v1/messages`, {body: '{}', headers: {authorization: 'Bearer garbage'}, method: 'POST'})
      expect(open.status).to.equal(200)
      expect(await (await fetch(`${server.url}/v1/cluster/auth`)).json()).to.deep.equal({auth: false})
      const login = await fetch(`${server.url}/token`, {body: new URLSearchParams({password: passwordOf('root'), username: 'root'}), method: 'POST'})
      expect(login.status).to.equal(400)
      expect((await login.json()).error).to.include({code: 'auth_disabled', message: 'access control is off on this service, so there is nothing to log in to or out of; every call works without credentials.'})
    })
  })
})
