/**
 * Pages of other sites in a real headless Chromium against a real `service-local` with its defaults (no access
 * control): a page on another origin (another port of the same address, or another name for this machine) sends the
 * `no-cors` request that registers a model, which a browser sends without asking, and tries to read the model list;
 * a page whose own name was pointed at 127.0.0.1 (DNS rebinding, done here by Chromium's resolver rules) loads the
 * service's answers as its own; a page framing /ui or /docs. None of them changes anything, reads anything or shows
 * the service's pages. A page of an origin the operator allows (--allowed-origins) calls the API with credentials,
 * preflight and all, and a name the operator allows (--allowed-hosts) is answered.
 */
import {expect} from 'chai'
import {createServer, get, type Server} from 'node:http'

import {type BrowserSession, checkAndClose, openBrowser} from '../helpers/browser.js'
import {writeTinyChatModel} from '../helpers/models.js'
import {callApi, type RunningService, startService, temporaryDirectory} from '../helpers/service.js'

/** A site of its own on a free port of 127.0.0.1: an empty page, from which the test runs the page's script. */
async function servePage(): Promise<{server: Server; port: number}> {
  const server = createServer((_request, response) => response.writeHead(200, {'content-type': 'text/html'}).end('<!doctype html><title>another site</title>'))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {port: (server.address() as {port: number}).port, server}
}

const REBOUND = 'rebound.example'

describe('pages of other sites against a default local service, in headless Chromium', function () {
  this.timeout(180_000)
  let service: RunningService
  let hostile: {server: Server; port: number}
  let friendly: {server: Server; port: number}
  let browser: BrowserSession | undefined
  let registration: Record<string, unknown>

  before(async () => {
    ;[hostile, friendly] = await Promise.all([servePage(), servePage()])
    ;({family: registration} = await writeTinyChatModel(await temporaryDirectory(), 'drive-by'))
    service = await startService({args: ['--allowed-origins', `http://localhost:${friendly.port}`, '--allowed-hosts', 'models.example']})
  })

  after(async () => {
    await service?.stop()
    hostile?.server.close()
    friendly?.server.close()
  })

  afterEach(async () => {
    await browser?.close()
    browser = undefined
  })

  /** What the service answered the page, as the browser's network saw it (the page itself cannot see a no-cors answer). */
  const answersSeen = (session: BrowserSession) => {
    const seen: Array<{path: string; status: number}> = []
    session.page.on('response', (response) => {
      if (response.url().startsWith(service.url)) seen.push({path: new URL(response.url()).pathname, status: response.status()})
    })
    return seen
  }

  for (const [kind, host] of [
    ['another name for this machine (cross-site)', 'localhost'],
    ['another port of the same address (same-site)', '127.0.0.1'],
  ]) {
    it(`from ${kind}: the no-cors registration is refused and the model list cannot be read`, async () => {
      browser = await openBrowser(`http://${host}:${hostile.port}`, {interceptRequests: false})
      const seen = answersSeen(browser)
      await browser.page.goto(`http://${host}:${hostile.port}/`)
      const result = await browser.page.evaluate(
        async ({model, target}) => {
          const sent = await fetch(`${target}/v1/model_registrations/LLM`, {body: JSON.stringify({model, persist: false}), headers: {'Content-Type': 'text/plain'}, method: 'POST', mode: 'no-cors'}).then(
            (response) => response.type,
            (error: Error) => `failed: ${error.message}`,
          )
          const read = await fetch(`${target}/v1/models`).then(
            (response) => response.text(),
            (error: Error) => `failed: ${error.message}`,
          )
          return {read, sent}
        },
        {model: registration, target: service.url},
      )
      expect(result.sent, 'the browser sends a no-cors request without asking; the page sees only an opaque answer').to.equal('opaque')
      expect(result.read).to.match(/^failed: /)
      expect(seen).to.deep.include({path: '/v1/model_registrations/LLM', status: 403})
      expect(seen.every(({status}) => status === 403)).to.equal(true, JSON.stringify(seen))
      expect((await callApi(service, 'GET', '/v1/model_registrations/LLM/drive-by')).status).to.equal(404)
    })
  }

  it('cannot show the web interface or /docs inside a frame of its own', async () => {
    browser = await openBrowser(`http://localhost:${hostile.port}`, {interceptRequests: false})
    await browser.page.goto(`http://localhost:${hostile.port}/`)
    for (const path of ['/ui/', '/docs']) {
      await browser.page.evaluate((source) => {
        const frame = document.createElement('iframe')
        frame.src = source
        document.body.replaceChildren(frame)
        return new Promise((resolve) => frame.addEventListener('load', resolve))
      }, `${service.url}${path}`)
      // The frame of the iframe now in the page: the page's list of frames can still hold the one just replaced.
      const framed = (await (await browser.page.locator('iframe').elementHandle())!.contentFrame())!
      expect(framed.url(), path).to.not.equal(`${service.url}${path}`)
      expect(await framed.locator('#app, #swagger-ui').count(), `${path} rendered in the frame`).to.equal(0)
    }
  })

  it('from a page whose name was pointed at this machine (DNS rebinding): the service answers none of its requests', async () => {
    const {port} = new URL(service.url)
    const rebound = `http://${REBOUND}:${port}`
    // Chromium's own defence, which refuses a public site's page a call to this machine (Local Network Access), is off:
    // other browsers have none, and the service must refuse the call itself.
    browser = await openBrowser(rebound, {args: [`--host-resolver-rules=MAP ${REBOUND} 127.0.0.1`, '--disable-features=Translate,OptimizationHints,MediaRouter,LocalNetworkAccessChecks']})
    // The attacker's own server gave the page before the name was pointed here; everything after reaches the service.
    await browser.page.route(`${rebound}/`, (route) => route.fulfill({body: '<!doctype html><title>rebound</title>', contentType: 'text/html'}))
    await browser.page.goto(`${rebound}/`)
    const result = await browser.page.evaluate(async (model) => {
      const webInterface = await fetch('/ui/')
      const registering = await fetch('/v1/model_registrations/LLM', {body: JSON.stringify({model, persist: false}), headers: {'Content-Type': 'application/json'}, method: 'POST'})
      const listing = await fetch('/v1/models')
      return {listing: listing.status, registering: registering.status, said: await listing.text(), webInterface: webInterface.status}
    }, registration)
    expect(result).to.include({listing: 403, registering: 403, webInterface: 403})
    expect(result.said).to.contain('Host header').and.to.not.contain('"data"')
    expect((await callApi(service, 'GET', '/v1/model_registrations/LLM/drive-by')).status).to.equal(404)
  })

  it('answers a name given with --allowed-hosts, and no other', async () => {
    const {port} = new URL(service.url)
    const statusFor = (host: string) =>
      new Promise<number>((resolve, reject) => get({headers: {host}, host: '127.0.0.1', path: '/v1/models', port}, (response) => resolve(response.resume().statusCode!)).on('error', reject))
    expect(await statusFor(`models.example:${port}`)).to.equal(200)
    expect(await statusFor(`${REBOUND}:${port}`)).to.equal(403)
  })

  it('from an origin the operator allows: the page calls the API with a credential, asking first as CORS wants, and reads the answer', async () => {
    browser = await openBrowser(`http://localhost:${friendly.port}`, {interceptRequests: false})
    const seen = answersSeen(browser)
    await browser.page.goto(`http://localhost:${friendly.port}/`)
    const listed = await browser.page.evaluate(async (target) => {
      const response = await fetch(`${target}/v1/models`, {headers: {Authorization: 'Bearer sk-not-needed-here'}})
      return {body: await response.json(), version: response.headers.get('x-service-version')}
    }, service.url)
    expect(listed.body).to.deep.equal({data: [], object: 'list'})
    expect(listed.version, 'an exposed header').to.be.a('string')
    expect(seen.map(({status}) => status)).to.deep.equal([200])
    expect(service.output(), 'the preflight the Authorization header asks for').to.match(/OPTIONS \/v1\/models\b.*204/)
    await checkAndClose(browser)
    browser = undefined
  })
})
