/**
 * `/docs` in a real headless Chromium (Debian's `chromium`, driven by playwright-core) against a real `service-local`:
 * the page comes whole from the service (no script, style, font or image from another host, checked in its HTML and
 * in every request the browser makes), renders every operation with no console error, and "Try it out" of
 * GET /v1/models answers 200; with access control on, the same call is refused until the reader authorizes, either by
 * pasting an API key (bearer) or by logging in with a username and password (OAuth2 password grant at /token).
 */
import {expect} from 'chai'
import type {Page} from 'playwright-core'

import {apiKeyOf, passwordOf, writeTestAuthConfig} from '../helpers/auth.js'
import {type BrowserOptions, type BrowserSession, openBrowser} from '../helpers/browser.js'
import {callApi, type RunningService, startService, temporaryDirectory} from '../helpers/service.js'

/** `/docs` of `service` in Chromium with a fresh profile (test/helpers/browser.ts), once its operations show. */
async function openDocs(service: RunningService, options: BrowserOptions = {}): Promise<BrowserSession> {
  const browser = await openBrowser(service.url, options)
  await browser.page.goto(`${service.url}/docs`)
  await browser.page.locator('.opblock').first().waitFor()
  return browser
}

/** Expands GET /v1/models, presses "Try it out" and "Execute", and answers the status and body the page shows. */
async function tryListingModels(page: Page): Promise<{status: string; body: string}> {
  const operation = page.locator('#operations-models-getV1Models')
  if (!(await operation.locator('.try-out__btn').isVisible())) await operation.locator('.opblock-summary-control').click()
  if ((await operation.locator('.try-out__btn').innerText()).trim() === 'Try it out') await operation.locator('.try-out__btn').click()
  await operation.locator('.execute').click()
  const status = operation.locator('.live-responses-table .response .response-col_status')
  await status.waitFor()
  const answer = {body: await operation.locator('.live-responses-table .response-col_description .microlight').first().innerText(), status: (await status.innerText()).trim()}
  await operation.locator('.btn-clear').click()
  return answer
}

describe('/docs: the interactive API reference, offline, in headless Chromium', function () {
  let service: RunningService
  let secured: RunningService
  const operationCount = async (on: RunningService) => {
    const {paths} = (await callApi(on, 'GET', '/openapi.json')).body as {paths: Record<string, object>}
    return Object.values(paths).reduce((count, methods) => count + Object.keys(methods).length, 0)
  }

  before(async () => {
    service = await startService()
    secured = await startService({args: ['--auth-config', await writeTestAuthConfig(await temporaryDirectory())]})
  })

  after(async () => Promise.all([service?.stop(), secured?.stop()]))

  it('is one HTML page from the service: every script and style inline, no address of another host to load', async () => {
    const response = await fetch(`${service.url}/docs`)
    expect(response.headers.get('content-type')).to.equal('text/html; charset=utf-8')
    const html = await response.text()
    const loaded = [...html.matchAll(/<(?:script|link|img|iframe)\b[^>]*?\b(?:src|href)\s*=\s*["']?([^"'\s>]+)/gi), ...html.matchAll(/url\(\s*["']?([^"')]+)/gi), ...html.matchAll(/@import\s+["']([^"']+)/gi)].map(
      ([, url]) => url,
    )
    expect(loaded.filter((url) => !url.startsWith('data:') && /^(?:[a-z][\w+.-]*:|\/\/)/i.test(url)), 'addresses on another host').to.deep.equal([])
    expect(html).to.contain('SwaggerUIBundle(')
    // Its own inline script and styles run by their hashes, nothing else does, and no other site may frame it.
    const policy = response.headers.get('content-security-policy')!
    expect(policy).to.match(/^default-src 'none'; script-src 'sha256-[\w+/=]+' 'sha256-[\w+/=]+'; style-src 'sha256-[\w+/=]+';/)
    expect(policy).to.contain("frame-ancestors 'none'").and.to.contain("connect-src 'self'")
    expect(response.headers.get('x-frame-options')).to.equal('DENY')
  })

  it('renders every operation with no console error and no request off the service, and "Try it out" lists the models', async function () {
    this.timeout(120_000)
    const browser = await openDocs(service)
    const {page} = browser
    try {
      expect(await page.locator('.opblock').count()).to.equal(await operationCount(service))
      expect(await page.locator('#operations-LLM-postV1ChatCompletions').count()).to.equal(1)
      const answer = await tryListingModels(page)
      expect(answer.status).to.equal('200')
      expect(JSON.parse(answer.body)).to.deep.equal({data: [], object: 'list'})
      browser.check()
    } finally {
      await browser.close()
    }
  })

  it('with access control on, is refused until authorized by a pasted API key, then by a login with username and password', async function () {
    this.timeout(120_000)
    // The refusals before authorizing are 401s, which Chromium reports on its console.
    const browser = await openDocs(secured, {expectedStatuses: [401]})
    const {page} = browser
    try {
      expect((await tryListingModels(page)).status).to.equal('401')

      const bearer = page.locator('.auth-container', {hasText: 'http, Bearer'})
      await page.locator('button.authorize').first().click()
      await page.locator('#auth-bearer-value').fill(apiKeyOf('only-models:list'))
      await bearer.getByRole('button', {name: 'Apply credentials'}).click()
      await page.locator('.modal-ux .btn-done').first().click()
      expect((await tryListingModels(page)).status).to.equal('200')
      // Kept in localStorage, the key would outlast the page for whoever uses the browser next.
      expect(await page.evaluate(() => Object.keys(localStorage)), 'nothing kept in localStorage').to.deep.equal([])
      await page.reload()
      await page.locator('.opblock').first().waitFor()
      expect((await tryListingModels(page)).status, 'after a reload the key is gone').to.equal('401')

      await page.locator('button.authorize').first().click()
      await page.locator('#oauth_username').fill('root')
      await page.locator('#oauth_password').fill(passwordOf('root'))
      const login = page.waitForResponse((response) => response.url().endsWith('/token'))
      await page.locator('.auth-container', {has: page.locator('#oauth_username')}).getByRole('button', {name: 'Apply given OAuth2 credentials'}).click()
      expect((await login).status()).to.equal(200)
      await page.locator('.modal-ux .btn-done').first().click()
      expect((await tryListingModels(page)).status).to.equal('200')
      browser.check()
    } finally {
      await browser.close()
    }
  })
})
