/**
 * What the app lets a browser do, checked with raw requests that set the headers a browser (or a rebound DNS name)
 * would: the Host a request names, the Origin of the page sending it, Sec-Fetch-Site, a body's Content-Type, CORS
 * preflights of an allowed origin, and the security headers of every answer. node:http sends them as given (fetch
 * would refuse to set Host or Origin).
 */
import {expect} from 'chai'
import {request} from 'node:http'
import {hostname} from 'node:os'

import type {RouteDefinition} from '../../src/kernel/contracts.js'

import {AccessControl} from '../../src/auth/access-control.js'
import {parseAuthConfig} from '../../src/auth/config.js'
import {object, string} from '../../src/kernel/schema.js'
import {createApp} from '../../src/server/app.js'
import {type BrowserPolicy} from '../../src/server/browser-guard.js'
import {listen, type Listening} from '../../src/server/listen.js'
import {testAuthConfig} from '../helpers/auth.js'

const quiet = {debug() {}, error() {}, info() {}, warn() {}}
const received: unknown[] = []
const routes: RouteDefinition[] = [
  {
    body: object({name: string({maxLength: 50})}),
    async handler({body}) {
      received.push(body)
      return {body: {registered: true}, kind: 'json'}
    },
    method: 'POST',
    path: '/v1/things',
    permission: 'models:register',
    summary: 'A JSON route with side effects',
  },
  {
    async handler() {
      return {body: {data: []}, kind: 'json'}
    },
    method: 'GET',
    path: '/v1/things',
    permission: 'models:list',
    summary: 'A listing',
  },
]

interface Answer {
  status: number
  headers: Record<string, string | string[] | undefined>
  body: string
}

function send(server: Listening, path: string, {body, headers = {}, method = 'GET'}: {method?: string; headers?: Record<string, string>; body?: string} = {}): Promise<Answer> {
  const {port} = new URL(server.url)
  return new Promise((resolve, reject) => {
    const outgoing = request({headers: {host: `127.0.0.1:${port}`, ...headers}, host: '127.0.0.1', method, path, port}, (response) => {
      let text = ''
      response.on('data', (chunk: Buffer) => (text += chunk.toString()))
      response.on('end', () => resolve({body: text, headers: response.headers, status: response.statusCode!}))
    })
    outgoing.on('error', reject)
    outgoing.end(body)
  })
}

const messageOf = (answer: Answer) => (JSON.parse(answer.body) as {error: {message: string}}).error.message

async function serve(browsers?: Partial<BrowserPolicy>, access?: AccessControl): Promise<Listening> {
  const app = createApp({
    access,
    browsers: browsers && {allowedHosts: [], allowedOrigins: [], listenHost: '127.0.0.1', ...browsers},
    log: quiet,
    models: {get: () => expect.fail('no models here'), list: () => []},
    routes: routes.map((definition) => ({definition, plugin: 'test'})),
    version: '0.0.0',
  })
  return listen(app, {host: '127.0.0.1', port: 0})
}

describe('what a browser may do (browser-guard.ts)', () => {
  let server: Listening
  const json = {'content-type': 'application/json'}

  before(async () => {
    server = await serve()
  })

  after(() => server.close())
  beforeEach(() => received.splice(0))

  describe('a JSON route', () => {
    it('refuses a body of any type but JSON with 415, naming Content-Type and what to send, and runs nothing', async () => {
      for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', undefined]) {
        const answer = await send(server, '/v1/things', {body: '{"name": "shell"}', headers: type ? {'content-type': type} : {}, method: 'POST'})
        expect(answer.status, String(type)).to.equal(415)
        expect(messageOf(answer)).to.contain('Content-Type').and.to.contain('send it with Content-Type: application/json')
      }

      expect(received).to.deep.equal([])
    })

    it('reads application/json and the +json types', async () => {
      for (const type of ['application/json', 'application/json; charset=utf-8', 'application/vnd.example+json'])
        expect((await send(server, '/v1/things', {body: '{"name": "a"}', headers: {'content-type': type}, method: 'POST'})).status, type).to.equal(200)
      expect(received).to.deep.equal([{name: 'a'}, {name: 'a'}, {name: 'a'}])
    })
  })

  describe('the Host header', () => {
    it('is refused when it names another site, which is what a DNS-rebound page sends, naming the header and the setting', async () => {
      for (const host of ['evil.example', 'evil.example:9997', '127.0.0.1.evil.example', 'localhost.evil.example', 'evil.example@127.0.0.1']) {
        const answer = await send(server, '/v1/things', {headers: {host}})
        expect(answer.status, host).to.equal(403)
        expect(messageOf(answer)).to.contain('Host header').and.to.contain('--allowed-hosts or SERVICE_ALLOWED_HOSTS')
      }

      expect((await send(server, '/ui/', {headers: {host: 'evil.example'}})).status).to.equal(403)
    })

    it('passes with a loopback name, an IP address, this machine\'s name or the listen address', async () => {
      for (const host of ['localhost', 'localhost:1234', 'LOCALHOST.', 'app.localhost:80', '127.0.0.1:9', '[::1]:9997', '10.1.2.3', hostname()])
        expect((await send(server, '/v1/things', {headers: {host}})).status, host).to.equal(200)
      const named = await serve({listenHost: 'gpu-box.lan'})
      try {
        expect((await send(named, '/v1/things', {headers: {host: 'gpu-box.lan:9997'}})).status).to.equal(200)
        expect((await send(named, '/v1/things', {headers: {host: 'other-box.lan'}})).status).to.equal(403)
      } finally {
        await named.close()
      }
    })

    it('passes with a name the operator allows: exact, a domain\'s subdomains, or any', async () => {
      const allowing = await serve({allowedHosts: ['service-toolkit', '*.svc.cluster.local']})
      const anyHost = await serve({allowedHosts: ['*']})
      try {
        for (const host of ['service-toolkit:9997', 'st.ns.svc.cluster.local', 'a.b.svc.cluster.local', 'svc.cluster.local'])
          expect((await send(allowing, '/v1/things', {headers: {host}})).status, host).to.equal(200)
        for (const host of ['svc.cluster.local.evil.example', 'evilsvc.cluster.local', 'service-toolkit.evil.example'])
          expect((await send(allowing, '/v1/things', {headers: {host}})).status, host).to.equal(403)
        expect((await send(anyHost, '/v1/things', {headers: {host: 'evil.example'}})).status).to.equal(200)
      } finally {
        await Promise.all([allowing.close(), anyHost.close()])
      }
    })
  })

  describe('the Origin of a web page', () => {
    it('is refused on GET and POST when it is another site, naming the header and the setting, and the route runs not', async () => {
      for (const origin of ['http://evil.example', 'http://localhost:3000', 'http://127.0.0.1', 'null']) {
        const read = await send(server, '/v1/things', {headers: {origin}})
        expect(read.status, origin).to.equal(403)
        expect(messageOf(read)).to.contain('Origin header').and.to.contain('--allowed-origins or SERVICE_ALLOWED_ORIGINS')
        expect(read.headers['access-control-allow-origin']).to.equal(undefined)
        expect((await send(server, '/v1/things', {body: '{"name": "x"}', headers: {...json, origin}, method: 'POST'})).status).to.equal(403)
      }

      expect(received).to.deep.equal([])
    })

    it("passes when it is the service's own, as Host names it, with no CORS header", async () => {
      const {port} = new URL(server.url)
      for (const [host, origin] of [[`127.0.0.1:${port}`, `http://127.0.0.1:${port}`], [`localhost:${port}`, `http://localhost:${port}`], ['localhost', 'https://localhost']]) {
        const answer = await send(server, '/v1/things', {body: '{"name": "mine"}', headers: {...json, host, origin}, method: 'POST'})
        expect(answer.status, origin).to.equal(200)
        expect(answer.headers['access-control-allow-origin']).to.equal(undefined)
      }
    })

    it('refuses a request from another site that names no origin (Sec-Fetch-Site), but not a person following a link', async () => {
      for (const site of ['cross-site', 'same-site']) {
        const answer = await send(server, '/v1/things', {headers: {'sec-fetch-dest': 'image', 'sec-fetch-mode': 'no-cors', 'sec-fetch-site': site}})
        expect(answer.status, site).to.equal(403)
        expect(messageOf(answer)).to.contain('Sec-Fetch-Site')
      }

      const link = {'sec-fetch-dest': 'document', 'sec-fetch-mode': 'navigate', 'sec-fetch-site': 'cross-site'}
      expect((await send(server, '/v1/things', {headers: link})).status).to.equal(200)
      expect((await send(server, '/v1/things', {headers: {'sec-fetch-dest': 'document', 'sec-fetch-mode': 'navigate', 'sec-fetch-site': 'same-origin'}})).status).to.equal(200)
    })

    it('passes without an Origin: curl, SDKs, servicectl and workers send none', async () => {
      expect((await send(server, '/v1/things', {body: '{"name": "cli"}', headers: json, method: 'POST'})).status).to.equal(200)
      expect(received).to.deep.equal([{name: 'cli'}])
    })
  })

  describe('an origin the operator allows', () => {
    let allowing: Listening

    before(async () => {
      allowing = await serve({allowedOrigins: ['https://chat.example.com', 'http://localhost:*']}, new AccessControl(parseAuthConfig(testAuthConfig(), 'auth.json')))
    })

    after(() => allowing.close())

    it('gets CORS answers that echo it, and its preflight is answered with the methods and the headers it asks for', async () => {
      for (const origin of ['https://chat.example.com', 'http://localhost:8080']) {
        const preflight = await send(allowing, '/v1/things', {
          headers: {'access-control-request-headers': 'authorization, content-type, x-api-key, anthropic-version', 'access-control-request-method': 'POST', origin},
          method: 'OPTIONS',
        })
        expect(preflight.status, origin).to.equal(204)
        expect(preflight.headers).to.include({
          'access-control-allow-headers': 'authorization, content-type, x-api-key, anthropic-version',
          'access-control-allow-methods': 'GET, HEAD, POST, PUT, DELETE',
          'access-control-allow-origin': origin,
        })
        const refused = await send(allowing, '/v1/things', {headers: {origin}})
        expect(refused.status).to.equal(401)
        expect(refused.headers['access-control-allow-origin'], 'so that the page can read why').to.equal(origin)
        expect(refused.headers['access-control-expose-headers']).to.contain('X-Request-Id')
      }

      expect((await send(allowing, '/v1/things', {headers: {origin: 'https://chat.example.com.evil.example'}})).status).to.equal(403)
    })

    it('learns nothing from a preflight about which routes exist', async () => {
      const preflight = (path: string) =>
        send(allowing, path, {headers: {'access-control-request-method': 'DELETE', origin: 'https://chat.example.com'}, method: 'OPTIONS'}).then(({headers, status}) => ({
          methods: headers['access-control-allow-methods'],
          status,
        }))
      expect(await preflight('/v1/things')).to.deep.equal(await preflight('/v1/no-such-route'))
    })
  })

  describe('security headers', () => {
    it('on every answer: nosniff, and no framing by another site', async () => {
      for (const path of ['/v1/things', '/no-such-route']) {
        const {headers} = await send(server, path)
        expect(headers, path).to.include({'content-security-policy': "default-src 'none'; frame-ancestors 'none'", 'x-content-type-options': 'nosniff', 'x-frame-options': 'DENY'})
      }

      expect((await send(server, '/v1/things', {headers: {host: 'evil.example'}})).headers).to.include({'x-content-type-options': 'nosniff'})
    })
  })
})
