/**
 * Access control of a real `service-local --auth-config` process: every route of the app (core and plugin
 * routes, read from its own OpenAPI document) is called with every kind of credential a client might send,
 * on one service. Tokens that are expired, forged or unsigned are minted here with jose, not waited for.
 */
import {expect} from 'chai'
import {execa} from 'execa'
import {createHash} from 'node:crypto'
import {readdir, readFile, stat, writeFile} from 'node:fs/promises'
import {join} from 'node:path'
import OpenAI from 'openai'

import {Client} from '../../src/client/client.js'
import {PERMISSIONS} from '../../src/kernel/permissions.js'
import {apiKeyOf, AUTH_SECRET, mintToken, OTHER_SECRET, passwordOf, TEST_USERS, unsignedToken, writeTestAuthConfig} from '../helpers/auth.js'
import {writeTinyChatModel} from '../helpers/models.js'
import {callApi, ROOT, type RunningService, servicectl, startService, temporaryDirectory} from '../helpers/service.js'

/** The routes anyone may call. Any other route without a permission fails the first test. */
const PUBLIC_ROUTES = ['GET /api/version', 'GET /docs', 'GET /health', 'GET /openapi.json', 'GET /v1/cluster/auth', 'GET /v1/cluster/version', 'POST /token', 'POST /v1/auth/logout']
/** What the public routes answer to a call without a body or credential: the token request lacks its fields, a logout its token. */
const PUBLIC_STATUS: Record<string, number> = {'/token': 400, '/v1/auth/logout': 401}

interface Route {
  method: string
  path: string
  permission: string
  hasBody: boolean
  /** Anthropic's API (under /anthropic, and POST /v1/messages), as its document's error answer says. */
  anthropic: boolean
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
    routes = Object.entries(document.paths as Record<string, Record<string, {'x-permission': string; requestBody?: unknown; responses: {default?: unknown}}>>).flatMap(([path, operations]) =>
      Object.entries(operations).map(([method, operation]) => ({
        anthropic: JSON.stringify(operation.responses.default ?? '').includes('AnthropicError'),
        hasBody: operation.requestBody !== undefined,
        method: method.toUpperCase(),
        path,
        permission: operation['x-permission'],
      })),
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

  describe('on every route', () => {
    it('puts every route, core and plugin, behind a permission or on the explicit public list', () => {
      expect(routes.map((r) => `${r.method} ${r.path}`)).to.include.members(['POST /v1/chat/completions', 'POST /v1/completions', 'POST /v1/models', 'GET /v1/models'])
      for (const route of routes) expect([...PERMISSIONS, 'public', 'authenticated'], `${route.method} ${route.path}`).to.include(route.permission)
      expect(routes.filter((r) => r.permission === 'public').map((r) => `${r.method} ${r.path}`)).to.have.members(PUBLIC_ROUTES)
    })

    it("matches the permission tables of the documentation pages, route for route", async () => {
      // A page under docs/ that documents routes of its own carries a table of them in access-control.md's form.
      const pages = (await readdir(join(ROOT, 'docs'))).filter((name) => name.endsWith('.md')).map((name) => join('docs', name))
      const tables = await Promise.all(pages.map(async (page) => {
        const text = await readFile(join(ROOT, page), 'utf8')
        return text.includes('<!-- permission table -->') ? text.slice(text.indexOf('<!-- permission table -->')).split('\n\n')[0] : ''
      }))
      const documented = tables.join('\n').split('\n').flatMap((row) => {
        const [, permission, cell] = /^\| `?([\w:]+)`? \| (.*) \|$/.exec(row) ?? []
        return permission ? [...cell.matchAll(/`(\w+ \/\S*)`/g)].map(([, route]) => `${route} ${permission}`) : []
      })
      const actual = routes.map((r) => `${r.method} ${r.path} ${r.permission}`)
      expect(documented, 'add each route to the permission table in docs/access-control.md, or in the page under docs/ that documents it').to.have.members(actual)
    })

    it('answers the public routes to anyone, whatever credential comes along', async () => {
      for (const route of routes.filter((r) => r.permission === 'public')) {
        const anonymous = await callRoute(route)
        expect(anonymous.status, `${route.method} ${route.path}`).to.equal(PUBLIC_STATUS[route.path] ?? 200)
        expect((await callRoute(route, {credential: 'garbage'})).status).to.equal(anonymous.status)
      }

      expect((await call('GET', '/v1/cluster/auth')).body).to.deep.equal({auth: true})
    })

    it('answers 401 with a Bearer challenge to every other route without a valid credential', async () => {
      const credentials: Array<[string, Record<string, string>, RegExp]> = [
        ['no credentials', {}, /^this service has access control on: send (`x-api-key: <API key>`, or )?`Authorization: Bearer <credential>`/],
        ['garbage (or a password)', {authorization: 'Bearer hunter2'}, /^the bearer credential is neither an API key nor an access token .*\(a password is not accepted here\)/],
        ['a bearer with spaces', {authorization: `Bearer ${passwordOf('root')}`}, /^the Authorization header must be `Bearer <API key or access token>`/],
        ['another scheme', {authorization: `Basic ${Buffer.from('root:x').toString('base64')}`}, /^the Authorization header must be `Bearer/],
        ['an unknown API key', {authorization: 'Bearer sk-0000000000000'}, /^the API key is not valid/],
        ['an expired token', {authorization: `Bearer ${await mintToken({expiresIn: -60, sub: 'root'})}`}, /^the access token expired at \d{4}-.*; log in again/],
        ['a token signed with another key', {authorization: `Bearer ${await mintToken({secret: OTHER_SECRET, sub: 'root'})}`}, /^the bearer credential is neither/],
        ['a token with another algorithm', {authorization: `Bearer ${await mintToken({algorithm: 'HS512', sub: 'root'})}`}, /^the bearer credential is neither/],
        ['an unsigned token (alg: none)', {authorization: `Bearer ${unsignedToken('root')}`}, /^the bearer credential is neither/],
        ['an x-api-key header outside Anthropic\'s API', {'x-api-key': apiKeyOf('root')}, /^this service has access control on/],
      ]
      for (const route of guarded()) {
        for (const [what, headers, message] of credentials) {
          // Anthropic clients send their key in x-api-key, so there it is a credential like any other.
          if (route.anthropic && 'x-api-key' in headers) continue
          const answer = await callRoute(route, {headers})
          const where = `${route.method} ${route.path} with ${what}`
          expect(answer.status, where).to.equal(401)
          // Ollama's clients read the error as a string.
          if (route.path.startsWith('/api/')) expect(answer.body.error, where).to.match(message)
          else {
            expect(answer.body.error, where).to.include({type: 'authentication_error'})
            expect(answer.body.error.message, where).to.match(message)
          }

          expect(answer.challenge, where).to.match(/^Bearer/)
        }
      }
    })

    it('answers 403 naming the permission to a valid caller without it, and lets through one with exactly that permission', async () => {
      for (const route of guarded()) {
        const where = `${route.method} ${route.path}`
        const lacking = route.permission === 'authenticated' ? [] : route.permission === 'admin' ? ['nobody'] : ['nobody', `all-but-${route.permission}`]
        for (const username of lacking) {
          for (const credential of [tokens.get(username)!, apiKeyOf(username)]) {
            const answer = await callRoute(route, {credential})
            expect(answer.status, `${where} as ${username}`).to.equal(403)
            const needs = `does not have the permission ${route.permission}, which ${route.method} ${route.path.replaceAll(/\{(\w+)\}/g, ':$1')} needs`
            if (route.path.startsWith('/api/')) {
              expect(answer.body.error).to.contain(needs)
              continue
            }

            // Anthropic's error shape has no code; the type says the same.
            expect(answer.body.error).to.include(route.anthropic ? {type: 'permission_error'} : {code: 'forbidden', type: 'permission_error'})
            expect(answer.body.error.message).to.contain(needs)
          }
        }

        const admitted = await callRoute(route, {credential: apiKeyOf('root')})
        expect(admitted.status, where).not.to.be.oneOf([401, 403])
        const holders = route.permission === 'authenticated' ? ['root', 'nobody'] : route.permission === 'admin' ? ['root'] : ['root', `only-${route.permission}`]
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

    it('answers an anonymous OPTIONS with the same 401 and no Allow header whether or not the route exists', async () => {
      const options = async (path: string, headers: Record<string, string> = {}) => {
        const response = await fetch(`${service.url}${path}`, {headers, method: 'OPTIONS'})
        return {allow: response.headers.get('allow'), body: await response.text(), challenge: response.headers.get('www-authenticate'), status: response.status}
      }

      const existing = await options('/v1/models')
      expect(existing).to.include({allow: null, challenge: 'Bearer', status: 401})
      expect(await options('/v1/no-such-route')).to.deep.equal(existing)
      expect(await options('/v1/models', {authorization: 'Bearer sk-0000000000000'})).to.include({allow: null, status: 401})
      const authenticated = await options('/v1/models', {authorization: `Bearer ${apiKeyOf('nobody')}`})
      expect(authenticated.status).to.equal(200)
      expect(authenticated.allow?.split(', ')).to.include.members(['GET', 'POST'])
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
  })

  describe('with the client libraries', () => {
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

    it('names the running models in a 404 only to a caller that may list them', async () => {
      const chat = (username: string) => call('POST', '/v1/chat/completions', {body: {messages: [{content: 'Hi', role: 'user'}], model: 'ghost'}, credential: apiKeyOf(username)})
      const reader = await chat('only-models:read')
      expect(reader.status).to.equal(404)
      expect(reader.body.error).to.deep.equal({code: 'model_not_found', message: 'model "ghost" is not running.', param: 'model', type: 'not_found_error'})
      for (const username of ['root', 'all-but-models:start']) expect((await chat(username)).body.error.message, username).to.equal('model "ghost" is not running. Running models: tiny-chat.')
      const stop = (username: string) => call('DELETE', '/v1/models/ghost', {credential: apiKeyOf(username)})
      expect((await stop('only-models:stop')).body.error.message).to.equal('model "ghost" is not running.')
      expect((await stop('root')).body.error.message).to.equal('model "ghost" is not running. Running models: tiny-chat.')
    })

    it("logs in with the toolkit's client, which then sends its token", async () => {
      const toolkit = new Client(service.url)
      expect((await toolkit.login('only-models:list', passwordOf('only-models:list'))).token_type).to.equal('bearer')
      expect((await toolkit.list()).map((m) => m.id)).to.deep.equal(['tiny-chat'])
      expect(await new Client(service.url, {apiKey: apiKeyOf('nobody')}).list().catch((error) => error)).to.include({code: 'forbidden', status: 403})
      expect(await toolkit.login('only-models:list', 'wrong').catch((error) => error)).to.include({code: 'login_failed', status: 401})
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

  describe('with servicectl as a real process', () => {
    let home: string
    /** Everything servicectl printed, to check no secret is among it. */
    const printed: string[] = []
    const cli = async (args: string[], input?: string) => {
      const result = await servicectl(args, {env: {SERVICE_ENDPOINT: service.url, SERVICE_HOME: home}, input})
      printed.push(result.stdout, result.stderr)
      expect(result.stderr, 'a stack trace').not.to.match(/\n\s+at /)
      return result
    }

    before(async () => {
      home = await temporaryDirectory('servicectl-home-')
    })

    it('says how to log in when there is no credential, logs in, saves the token for the endpoint only for the user, and uses it', async () => {
      const anonymous = await cli(['list'])
      expect(anonymous.exitCode).to.equal(1)
      expect(anonymous.stderr).to.equal(`Error: ${service.url} has access control on; log in with \`servicectl login -e ${service.url} --username <name>\`, or pass an API key with --api-key.`)

      const login = await cli(['login', '-e', `${service.url}/`, '--username', 'only-models:list', '--password', passwordOf('only-models:list')])
      expect(login.exitCode, login.stderr).to.equal(0)
      const file = join(home, 'auth', createHash('sha256').update(service.url).digest('hex'))
      expect(login.stdout).to.match(new RegExp(`^Logged in to ${service.url} as only-models:list until \\d{4}-.*Z; commands to this endpoint now use the login saved in ${file}\\.$`))
      expect((await stat(file)).mode & 0o777).to.equal(0o600)
      expect((await stat(join(home, 'auth'))).mode & 0o777).to.equal(0o700)
      expect(JSON.parse(await readFile(file, 'utf8'))).to.include({endpoint: service.url, username: 'only-models:list'})

      const {port} = new URL(service.url)
      const listed = await servicectl(['list', '-H', '127.0.0.1', '-p', port, '--json'], {env: {SERVICE_HOME: home}})
      expect(listed.exitCode, listed.stderr).to.equal(0)
      expect(JSON.parse(listed.stdout).map((m: {id: string}) => m.id)).to.deep.equal(['tiny-chat'])
    })

    it('prints one line naming the permission when the login lacks it, in --json too', async () => {
      const refused = await cli(['terminate', '--model-uid', 'tiny-chat'])
      expect(refused.exitCode).to.equal(1)
      expect(refused.stderr).to.equal(
        'Error: user "only-models:list" does not have the permission models:stop, which DELETE /v1/models/:model_uid needs; ask an administrator to add it to the user\'s permissions in the access-control config.',
      )
      const json = await cli(['terminate', '--model-uid', 'tiny-chat', '--json'])
      expect(JSON.parse(json.stdout).error).to.deep.include({code: 'forbidden', status: 403})
    })

    it('says to log in again when the saved login expired or is no longer accepted', async () => {
      const file = join(home, 'auth', createHash('sha256').update(service.url).digest('hex'))
      const saved = JSON.parse(await readFile(file, 'utf8'))
      await writeFile(file, JSON.stringify({...saved, access_token: await mintToken({expiresIn: -60, sub: 'only-models:list'})}))
      const expired = await cli(['list'])
      expect(expired.exitCode).to.equal(1)
      expect(expired.stderr).to.equal(`Error: your login to ${service.url} as only-models:list expired; log in again with \`servicectl login -e ${service.url} --username only-models:list\`.`)
      await writeFile(file, JSON.stringify({...saved, access_token: await mintToken({secret: OTHER_SECRET, sub: 'only-models:list'})}))
      expect((await cli(['list'])).stderr).to.equal(
        `Error: your saved login to ${service.url} as only-models:list is no longer accepted; log in again with \`servicectl login -e ${service.url} --username only-models:list\`.`,
      )
    })

    it('takes an API key with -ak (over a saved login) and says when it is refused', async () => {
      const keyed = await cli(['list', '-ak', apiKeyOf('only-models:list')])
      expect(keyed.exitCode, keyed.stderr).to.equal(0)
      expect(keyed.stdout).to.match(/tiny-chat\s+LLM/)
      const wrong = await cli(['list', '-ak', 'sk-0000000000000'])
      expect(wrong.exitCode).to.equal(1)
      expect(wrong.stderr).to.equal(`Error: ${service.url} refused the API key given with --api-key (or SERVICE_API_KEY); check it, or log in with \`servicectl login -e ${service.url} --username <name>\` instead.`)
    })

    it('refuses a wrong password in one line, and reads a password from stdin', async () => {
      const wrong = await cli(['login', '--username', 'root', '--password', 'wrong'])
      expect(wrong.exitCode).to.equal(1)
      expect(wrong.stderr).to.equal(`Error: cannot log in to ${service.url}: incorrect username or password.`)
      const piped = await cli(['login', '--username', 'root', '--password-stdin', '--json'], `${passwordOf('root')}\n`)
      expect(piped.exitCode, piped.stderr).to.equal(0)
      expect(JSON.parse(piped.stdout)).to.have.keys('auth', 'endpoint', 'expires_at', 'saved_to', 'username')
      expect((await cli(['terminate', '--model-uid', 'tiny-chat'])).stdout).to.equal('Terminated tiny-chat.')
      const silent = await cli(['login', '--username', 'root'])
      expect(silent.stderr).to.equal('Error: give the password with --password, or pipe it in with --password-stdin.')
    })

    it('never prints a password, key or token, including with --json', () => {
      const output = printed.join('\n')
      for (const secret of [AUTH_SECRET, passwordOf('root'), ...tokens.values(), 'eyJ']) expect(output.includes(secret), secret).to.equal(false)
    })
  })

  describe('in the service log', () => {
    it('keeps the secret, passwords, API keys and tokens out of the service output and log file', async () => {
      const logged = service.output() + (await readFile(join(service.home, 'logs/service-local.log'), 'utf8'))
      expect(logged).to.contain('access control on: 16 users, 16 API keys, HS256 tokens valid for 30 minutes')
      expect(logged).to.match(/login refused for a configured user \(username fingerprint [0-9a-f]{8}\)/)
      for (const secret of [AUTH_SECRET, 'eyJ', ...TEST_USERS.flatMap(({username}) => [passwordOf(username), apiKeyOf(username)])])
        expect(logged.includes(secret), `the log contains ${secret}`).to.equal(false)
    })

    it('never logs a refused username, which may be a password typed in the wrong field, and lets no value forge a log line', async () => {
      const typedPassword = 'Tr0ub4dor&3-correct-horse'
      const forged = '2026-01-01T00:00:00.000Z info  [local] user "root" logged in'
      const username = `${typedPassword}\n${forged}\r\u001B[2J`
      expect((await call('POST', '/token', {body: {password: 'x', username}})).status).to.equal(401)
      const file = join(service.home, 'logs/service-local.log')
      const lines = (service.output() + (await readFile(file, 'utf8'))).split('\n')
      expect(lines.some((line) => line.includes(typedPassword)), 'the refused username is in the log').to.equal(false)
      expect(lines.filter((line) => line.startsWith('2026-01-01T00:00:00.000Z')), 'a forged log line').to.deep.equal([])
      expect(lines.join('\n')).to.match(/login refused for an unknown username \(username fingerprint [0-9a-f]{8}\)/)
      expect(lines.join('\n'), 'an escape sequence reached the terminal').not.to.include('\u001B[2J')
    })

    it('keeps the log files and folders private to the user running the service', async () => {
      const logs = join(service.home, 'logs')
      expect((await stat(logs)).mode & 0o777).to.equal(0o700)
      expect((await stat(join(logs, 'service-local.log'))).mode & 0o777).to.equal(0o600)
      expect((await stat(join(logs, 'models'))).mode & 0o777).to.equal(0o700)
      expect((await stat(join(logs, 'models', 'tiny-chat.log'))).mode & 0o777).to.equal(0o600)
    })
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
      '  - user_config[0].permissions[0] "everything" is not a permission; use one of models:list, models:read, models:register, models:unregister, models:start, models:stop, metrics:read, admin',
      '  - user_config[0].api_keys[0] is not a valid API key: it must be "sk-" followed by exactly 13 letters or digits',
    ])
  })
})
