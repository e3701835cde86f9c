/**
 * Access control of a real `service-local --auth-config` process: every route of the app (core and plugin
 * routes, read from its own OpenAPI document) is called with every kind of credential a client might send,
 * on one service. Tokens that are expired, forged or unsigned are minted here with jose, not waited for.
 */
import {expect} from 'chai'
import {execa} from 'execa'
import {readFile, writeFile} from 'node:fs/promises'
import {join} from 'node:path'
import OpenAI from 'openai'

import {PERMISSIONS} from '../../src/kernel/permissions.js'
import {apiKeyOf, AUTH_SECRET, mintToken, OTHER_SECRET, passwordOf, TEST_USERS, unsignedToken, writeTestAuthConfig} from '../helpers/auth.js'
import {writeTinyChatModel} from '../helpers/models.js'
import {callApi, ROOT, type RunningService, startService, temporaryDirectory} from '../helpers/service.js'

/** The routes anyone may call. Any other route without a permission fails the first test. */
const PUBLIC_ROUTES = ['GET /docs', 'GET /health', 'GET /openapi.json', 'GET /v1/cluster/auth', 'GET /v1/cluster/version', 'POST /token']

interface Route {
  method: string
  path: string
  permission: string
  hasBody: boolean
}

interface Answer {
  status: number
  body: any
  challenge: string | null
}

describe('access control (service-local --auth-config)', function () {
  let service: RunningService
  let routes: Route[]
  const tokens = new Map<string, string>()

  async function call(method: string, path: string, {body, credential, headers = {}}: {body?: unknown; credential?: string; headers?: Record<string, string>} = {}): Promise<Answer> {
    const response = await fetch(`${service.url}${path}`, {
      body: body === undefined ? undefined : JSON.stringify(body),
      headers: {'content-type': 'application/json', ...(credential ? {authorization: `Bearer ${credential}`} : {}), ...headers},
      method,
    })
    const text = await response.text()
    return {body: response.headers.get('content-type')?.includes('json') ? JSON.parse(text) : text, challenge: response.headers.get('www-authenticate'), status: response.status}
  }

  /** A route called as a client would, with made-up path parameters and an empty body where it takes one. */
  const callRoute = (route: Route, options: {credential?: string; headers?: Record<string, string>} = {}) =>
    call(route.method, route.path.replaceAll(/\{\w+\}/g, 'ghost'), {...options, body: route.hasBody ? {} : undefined})

  before(async () => {
    const directory = await temporaryDirectory()
    service = await startService({args: ['--auth-config', await writeTestAuthConfig(directory), '--log-level', 'debug']})
    const document = (await call('GET', '/openapi.json')).body
    routes = Object.entries(document.paths as Record<string, Record<string, {'x-permission': string; requestBody?: unknown}>>).flatMap(([path, operations]) =>
      Object.entries(operations).map(([method, operation]) => ({hasBody: operation.requestBody !== undefined, method: method.toUpperCase(), path, permission: operation['x-permission']})),
    )
    await Promise.all(
      TEST_USERS.map(async ({username}) => {
        const {body, status} = await callApi(service, 'POST', '/token', {password: passwordOf(username), username})
        expect(status, username).to.equal(200)
        tokens.set(username, body.access_token)
      }),
    )
  })

  after(async () => service?.stop())

  const guarded = () => routes.filter((route) => route.permission !== 'public')

  it('puts every route, core and plugin, behind a permission or on the explicit public list', () => {
    expect(routes.map((r) => `${r.method} ${r.path}`)).to.include.members(['POST /v1/chat/completions', 'POST /v1/completions', 'POST /v1/models', 'GET /v1/models'])
    for (const route of routes) expect([...PERMISSIONS, 'public'], `${route.method} ${route.path}`).to.include(route.permission)
    expect(routes.filter((r) => r.permission === 'public').map((r) => `${r.method} ${r.path}`)).to.have.members(PUBLIC_ROUTES)
  })

  it('answers the public routes to anyone, whatever credential comes along', async () => {
    for (const route of routes.filter((r) => r.permission === 'public')) {
      const anonymous = await callRoute(route)
      expect(anonymous.status, `${route.method} ${route.path}`).to.equal(route.path === '/token' ? 400 : 200)
      expect((await callRoute(route, {credential: 'garbage'})).status).to.equal(anonymous.status)
    }

    expect((await call('GET', '/v1/cluster/auth')).body).to.deep.equal({auth: true})
  })

  it('answers 401 with a Bearer challenge to every other route without a valid credential', async () => {
    const credentials: Array<[string, Record<string, string>, RegExp]> = [
      ['no credentials', {}, /^this service has access control on: send `Authorization: Bearer <credential>`/],
      ['garbage (or a password)', {authorization: 'Bearer hunter2'}, /^the bearer credential is neither an API key nor an access token .*\(a password is not accepted here\)/],
      ['a bearer with spaces', {authorization: `Bearer ${passwordOf('root')}`}, /^the Authorization header must be `Bearer <API key or access token>`/],
      ['another scheme', {authorization: `Basic ${Buffer.from('root:x').toString('base64')}`}, /^the Authorization header must be `Bearer/],
      ['an unknown API key', {authorization: 'Bearer sk-0000000000000'}, /^the API key is not valid/],
      ['an expired token', {authorization: `Bearer ${await mintToken({expiresIn: -60, sub: 'root'})}`}, /^the access token expired at \d{4}-.*; log in again/],
      ['a token signed with another key', {authorization: `Bearer ${await mintToken({secret: OTHER_SECRET, sub: 'root'})}`}, /^the bearer credential is neither/],
      ['a token with another algorithm', {authorization: `Bearer ${await mintToken({algorithm: 'HS512', sub: 'root'})}`}, /^the bearer credential is neither/],
      ['an unsigned token (alg: none)', {authorization: `Bearer ${unsignedToken('root')}`}, /^the bearer credential is neither/],
      ['an x-api-key header outside /anthropic', {'x-api-key': apiKeyOf('root')}, /^this service has access control on/],
    ]
    for (const route of guarded()) {
      for (const [what, headers, message] of credentials) {
        const answer = await callRoute(route, {headers})
        const where = `${route.method} ${route.path} with ${what}`
        expect(answer.status, where).to.equal(401)
        expect(answer.body.error, where).to.include({type: 'authentication_error'})
        expect(answer.body.error.message, where).to.match(message)
        expect(answer.challenge, where).to.match(/^Bearer/)
      }
    }
  })

  it('answers 403 naming the permission to a valid caller without it, and lets through one with exactly that permission', async () => {
    for (const route of guarded()) {
      const where = `${route.method} ${route.path}`
      const lacking = route.permission === 'admin' ? ['nobody'] : ['nobody', `all-but-${route.permission}`]
      for (const username of lacking) {
        for (const credential of [tokens.get(username)!, apiKeyOf(username)]) {
          const answer = await callRoute(route, {credential})
          expect(answer.status, `${where} as ${username}`).to.equal(403)
          expect(answer.body.error).to.include({code: 'forbidden', type: 'permission_error'})
          expect(answer.body.error.message).to.contain(`does not have the permission ${route.permission}, which ${route.method} ${route.path.replaceAll(/\{(\w+)\}/g, ':$1')} needs`)
        }
      }

      const admitted = await callRoute(route, {credential: apiKeyOf('root')})
      expect(admitted.status, where).not.to.be.oneOf([401, 403])
      const holders = route.permission === 'admin' ? ['root'] : ['root', `only-${route.permission}`]
      for (const username of holders)
        for (const credential of [tokens.get(username)!, apiKeyOf(username)]) expect((await callRoute(route, {credential})).status, `${where} as ${username}`).to.equal(admitted.status)
    }

    expect((await call('GET', '/v1/models', {credential: apiKeyOf('only-models:list')})).body).to.deep.equal({data: [], object: 'list'})
  })

  it('tells anonymous callers nothing about which routes exist; authenticated ones get 404 and 405', async () => {
    expect((await call('GET', '/v1/no-such-route')).status).to.equal(401)
    expect((await call('PUT', '/v1/models')).status).to.equal(401)
    expect((await call('GET', '/anthropic/v1/no-such-route')).body).to.deep.include({type: 'error'})
    const credential = apiKeyOf('nobody')
    expect((await call('GET', '/v1/no-such-route', {credential})).body.error).to.include({code: 'not_found'})
    expect((await call('PUT', '/v1/models', {credential})).status).to.equal(405)
  })

  it('logs in with the OAuth2 form encoding or with JSON, and refuses bad credentials and other grants', async () => {
    const form = await fetch(`${service.url}/token`, {body: new URLSearchParams({grant_type: 'password', password: passwordOf('only-models:list'), username: 'only-models:list'}), method: 'POST'})
    expect(form.status).to.equal(200)
    expect(form.headers.get('cache-control')).to.equal('no-store')
    const token = await form.json()
    expect(token).to.include({expires_in: 1800, token_type: 'bearer'})
    expect((await call('GET', '/v1/models', {credential: token.access_token})).status).to.equal(200)

    const wrong = await call('POST', '/token', {body: {password: 'wrong', username: 'root'}})
    expect(wrong.status).to.equal(401)
    expect(wrong.body.error).to.include({code: 'login_failed', message: 'incorrect username or password.'})
    expect(wrong.challenge).to.equal('Bearer')
    expect((await call('POST', '/token', {body: {password: 'wrong', username: 'ghost'}})).body).to.deep.equal(wrong.body)
    const grant = await call('POST', '/token', {body: {grant_type: 'client_credentials', password: 'x', username: 'root'}})
    expect(grant.status).to.equal(400)
    expect(grant.body.error).to.include({param: 'grant_type'})
    const numeric = await call('POST', '/token', {body: {password: 12_345_678, username: 'root'}})
    expect(numeric.body.error.message).to.equal('`password` must be a non-empty string.')
  })

  describe('with the openai client and an API key', () => {
    before(async function () {
      const {family} = await writeTinyChatModel(await temporaryDirectory(), 'tiny-chat')
      const root = {authorization: `Bearer ${apiKeyOf('root')}`}
      expect((await callApi(service, 'POST', '/v1/model_registrations/LLM', {model: family, persist: false}, root)).status).to.equal(200)
      const launched = await callApi(service, 'POST', '/v1/models', {model_engine: 'llama.cpp', model_name: 'tiny-chat', n_ctx: 512, n_threads: 1}, root)
      expect(launched.status, JSON.stringify(launched.body)).to.equal(200)
    })

    const client = (apiKey: string) => new OpenAI({apiKey, baseURL: `${service.url}/v1`, maxRetries: 0})

    it('lists models and streams a chat with a key that may read', async () => {
      const reader = client(apiKeyOf('only-models:read'))
      const stream = await reader.chat.completions.create({max_tokens: 4, messages: [{content: 'Hi', role: 'user'}], model: 'tiny-chat', stream: true})
      let chunks = 0
      for await (const chunk of stream) chunks += chunk.choices.length
      expect(chunks).to.be.greaterThan(0)
      expect((await client(apiKeyOf('only-models:list')).models.list()).data.map((m) => m.id)).to.deep.equal(['tiny-chat'])
    })

    it('raises the SDK’s own errors for a wrong key and a missing permission', async () => {
      const unknown = await client('sk-0000000000000').models.list().catch((error) => error)
      expect(unknown).to.be.instanceOf(OpenAI.AuthenticationError)
      const lacking = await client(apiKeyOf('only-models:list'))
        .chat.completions.create({messages: [{content: 'Hi', role: 'user'}], model: 'tiny-chat'})
        .catch((error) => error)
      expect(lacking).to.be.instanceOf(OpenAI.PermissionDeniedError)
      expect(lacking.message).to.contain('does not have the permission models:read')
    })
  })

  it('keeps the secret, passwords, API keys and tokens out of the service output and log file', async () => {
    const logged = service.output() + (await readFile(join(service.home, 'logs/service-local.log'), 'utf8'))
    expect(logged).to.contain('access control on: 14 users, 14 API keys, HS256 tokens valid for 30 minutes')
    expect(logged).to.contain('login refused for user "root"')
    for (const secret of [AUTH_SECRET, ...TEST_USERS.flatMap(({username}) => [passwordOf(username), apiKeyOf(username), tokens.get(username)!])])
      expect(logged.includes(secret), `the log contains ${secret}`).to.equal(false)
  })
})

describe('service-local --auth-config with a bad config', () => {
  it('refuses to start, printing each problem on its own line and no stack trace', async () => {
    const directory = await temporaryDirectory()
    const file = join(directory, 'auth.json')
    await writeFile(file, JSON.stringify({auth_config: {algorithm: 'none', secret_key: 'hunter2', token_expire_in_minutes: 30}, user_config: [{api_keys: ['sk-1'], password: 'p', permissions: ['everything'], username: 'a'}]}))
    const started = await execa('node', [join(ROOT, 'bin/service-local.js'), '--port', '0', '--auth-config', file], {env: {SERVICE_HOME: directory}, reject: false, timeout: 20_000})
    expect(started.exitCode).to.equal(1)
    expect(started.stdout).to.equal('')
    expect(started.stderr.split('\n')).to.deep.equal([
      `service-local: the access-control config ${file} has 4 problems; the service did not start:`,
      '  - auth_config.algorithm "none" is not supported; use HS256, HS384 or HS512 (tokens are signed with secret_key)',
      '  - auth_config.secret_key is too weak: HS256 needs at least 32 bytes and it has 7; generate one with `openssl rand -hex 32`',
      '  - user_config[0].permissions[0] "everything" is not a permission; use one of models:list, models:read, models:register, models:unregister, models:start, models:stop, admin',
      '  - user_config[0].api_keys[0] is not a valid API key: it must be "sk-" followed by exactly 13 letters or digits',
    ])
  })
})
