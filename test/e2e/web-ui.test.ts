/**
 * The web interface at /ui of a real `service-local`, in headless Chromium (test/helpers/browser.ts fails a test on
 * any console error or request to another host): how the files are served, launching tiny-random-llm from the
 * catalogue to ready, a streamed chat, a crash's reason, terminating it, the playground's model picker following
 * launches and terminations made elsewhere, registering and unregistering a custom model, a download's progress
 * (from a local hub) and its cancel, and the login, the refusal naming the missing permission, and the logout when
 * access control is on.
 */
import {expect} from 'chai'
import {existsSync} from 'node:fs'
import {join} from 'node:path'

import {writeRandomLlamaGguf} from '../../plugins/engine-llama-cpp/src/gguf/random-llama.js'
import {apiKeyOf, passwordOf, writeTestAuthConfig} from '../helpers/auth.js'
import {type BrowserSession, checkAndClose, ensureChromium, openBrowser} from '../helpers/browser.js'
import {FakeHub} from '../helpers/fake-hub.js'
import {callApi, closedPort, type RunningService, startProgram, startService, temporaryDirectory} from '../helpers/service.js'

describe('web interface (service-local, headless Chromium)', function () {
  this.timeout(120_000)
  let service: RunningService
  let browser: BrowserSession | undefined

  before(async () => {
    await ensureChromium()
    // Every hub points at a closed port: the page and the model need nothing from the network.
    const unreachable = `http://127.0.0.1:${await closedPort()}`
    service = await startService({env: {HF_ENDPOINT: unreachable, MODELSCOPE_ENDPOINT: unreachable}})
  })

  afterEach(async () => {
    const opened = browser
    browser = undefined
    await checkAndClose(opened)
  })

  after(async () => service?.stop())

  it('serves the app at /ui: / redirects there, deep links get the app, hashed assets are immutable and compressed', async () => {
    const root = await fetch(`${service.url}/`, {redirect: 'manual'})
    expect(root.status).to.equal(302)
    expect(root.headers.get('location')).to.equal('/ui/')

    const deepLink = await fetch(`${service.url}/ui/playground/some-model`)
    expect(deepLink.status).to.equal(200)
    expect(deepLink.headers.get('content-type')).to.equal('text/html; charset=utf-8')
    expect(deepLink.headers.get('cache-control')).to.equal('no-cache')
    const html = await deepLink.text()
    const assets = [...html.matchAll(/(?:src|href)="(\/ui\/assets\/[^"]+)"/g)].map((match) => match[1])
    expect(assets.some((asset) => asset.endsWith('.js'))).to.equal(true)
    expect(assets.some((asset) => asset.endsWith('.css'))).to.equal(true)
    for (const asset of assets) {
      const response = await fetch(`${service.url}${asset}`, {headers: {'accept-encoding': 'gzip'}})
      expect(response.status, asset).to.equal(200)
      expect(response.headers.get('cache-control')).to.equal('max-age=31536000,immutable')
      expect(response.headers.get('content-encoding')).to.equal('gzip')
      expect(response.headers.get('content-type')).to.match(asset.endsWith('.js') ? /^text\/javascript/ : /^text\/css/)
    }

    expect((await fetch(`${service.url}/ui/assets/index-gone.js`)).status).to.equal(404)
    // The API is unchanged beside it.
    expect((await callApi(service, 'GET', '/v1/nothing-here')).body.error.code).to.equal('not_found')
  })

  it('is served by a supervisor too, from the same package', async () => {
    const supervisor = await startProgram('service-supervisor', ['-H', '127.0.0.1', '-p', '0'], {})
    try {
      const response = await fetch(`${supervisor.url}/ui/cluster`)
      expect(response.status).to.equal(200)
      expect(await response.text()).to.contain('<div id="app"></div>')
    } finally {
      await supervisor.stop()
    }
  })

  it('fits a phone-sized screen without sideways scrolling, and is usable with the keyboard alone', async () => {
    browser = await openBrowser(service.url, {viewport: {height: 844, width: 390}})
    const {page} = browser
    for (const path of ['/ui/', '/ui/models', '/ui/register', '/ui/cache', '/ui/cluster', '/ui/playground']) {
      await page.goto(`${service.url}${path}`)
      await page.locator('h1').first().waitFor()
      expect(await page.evaluate(() => document.documentElement.scrollWidth), path).to.be.at.most(390)
    }

    await page.setViewportSize({height: 800, width: 1280})
    await page.goto(`${service.url}/ui/`)
    await page.getByRole('button', {name: 'Configure tiny-random-llm'}).waitFor()
    // The catalogue holds a few hundred models: a keyboard user types the name into the search first.
    await page.getByRole('searchbox', {name: 'Search'}).focus()
    await page.keyboard.type('tiny-random')
    for (let presses = 0; presses < 80; presses++) {
      await page.keyboard.press('Tab')
      if (await page.evaluate(() => document.activeElement?.getAttribute('aria-label') === 'Configure tiny-random-llm')) break
    }

    await page.keyboard.press('Enter')
    await page.getByRole('form', {name: 'Launch tiny-random-llm'}).waitFor()

    // The model types are tabs: arrow keys move between them.
    const types = await page.getByRole('tab').allTextContents()
    const next = types[types.indexOf('LLM') + 1]
    await page.getByRole('tab', {name: 'LLM'}).focus()
    await page.keyboard.press('ArrowRight')
    expect(await page.getByRole('tab', {exact: true, name: next}).getAttribute('aria-selected')).to.equal('true')
    expect(await page.evaluate(() => document.activeElement?.textContent)).to.equal(next)
  })

  it('launches tiny-random-llm from the catalogue, shows its progress reach ready, chats with it streaming, shows why it crashed, and terminates it', async () => {
    browser = await openBrowser(service.url)
    const {page} = browser
    await page.goto(`${service.url}/`)
    await page.getByRole('searchbox', {name: 'Search'}).fill('tiny')
    await page.getByRole('button', {name: 'Configure tiny-random-llm'}).click()
    const form = page.getByRole('form', {name: 'Launch tiny-random-llm'})
    await form.getByText(/Memory estimate: \d[\d.]* (kB|MB)/).waitFor()
    // On a CPU machine vLLM cannot run this spec: the form does not offer it, and says why.
    if (!existsSync('/proc/driver/nvidia/version')) {
      expect(await form.getByRole('combobox', {name: 'Engine'}).locator('option').allTextContents()).to.include('llama.cpp').and.not.to.include('vllm')
      const notOffered = await form.locator('.unavailable-engines li').allTextContents()
      expect(notOffered.some((line) => line.startsWith('vllm pytorch') && line.includes("vLLM's CPU build cannot run tiny-random-llm")), notOffered.join('\n')).to.equal(true)
    }

    await form.getByRole('button', {name: 'Launch'}).click()
    await page.locator('[data-stage="ready"]').waitFor({timeout: 60_000})

    await page.getByRole('link', {name: 'Open playground'}).click()
    await page.waitForURL(`${service.url}/ui/playground/tiny-random-llm`)
    await page.getByRole('spinbutton', {name: 'Max tokens'}).fill('16')
    await page.getByRole('textbox', {name: 'Message'}).fill('Hello there')
    const streamed = page.waitForResponse((response) => response.url().endsWith('/v1/chat/completions'))
    await page.getByRole('button', {name: 'Send'}).click()
    expect((await streamed).headers()['content-type']).to.match(/^text\/event-stream/)
    const reply = page.locator('.messages li.assistant:not(.streaming)')
    await reply.waitFor()
    expect((await reply.textContent())!.replace(/^assistant/, '').trim()).to.not.equal('')
    await page.getByText('Code for this request').click()
    expect(await page.locator('.snippet pre').textContent()).to.contain('"model": "tiny-random-llm"').and.contain('"stream": true')

    await page.getByRole('link', {name: 'Running models'}).click()
    await page.getByRole('button', {name: 'Events'}).click()
    const events = page.getByRole('region', {name: 'Events of tiny-random-llm'})
    await events.getByText('ready', {exact: true}).waitFor()

    // A crash shows why, in the list and among the events.
    const {pid} = (await callApi(service, 'GET', '/v1/models/tiny-random-llm')).body
    process.kill(pid, 'SIGKILL')
    await page.locator('.status.error').waitFor()
    expect(await page.getByRole('row', {name: /^tiny-random-llm/}).textContent()).to.match(/error.*(exit|signal|SIGKILL|died|crash)/i)
    await events.getByText('crash', {exact: true}).waitFor()

    // On a phone the row is a card: its actions are reached without scrolling sideways.
    await page.setViewportSize({height: 844, width: 390})
    const terminateButton = page.getByRole('button', {name: 'Terminate tiny-random-llm'})
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).to.be.at.most(390)
    expect(await page.locator('.table-scroll').evaluate((box) => box.scrollWidth - box.clientWidth)).to.equal(0)
    const box = await terminateButton.boundingBox()
    expect(box!.x + box!.width).to.be.at.most(390)
    await page.setViewportSize({height: 800, width: 1280})

    // Terminating asks first; declined, the model keeps running.
    const asked: string[] = []
    page.once('dialog', (dialog) => {
      asked.push(dialog.message())
      void dialog.dismiss()
    })
    await terminateButton.click()
    expect(asked).to.deep.equal(['Terminate tiny-random-llm? Requests it is answering fail, and launching it again loads it anew.'])
    expect((await callApi(service, 'GET', '/v1/models')).body.data).to.have.length(1)
    page.once('dialog', (dialog) => void dialog.accept())
    await terminateButton.click()
    await page.getByText('No model runs.').waitFor()
    expect((await callApi(service, 'GET', '/v1/models')).body.data).to.deep.equal([])
  })

  it('renders a reply as Markdown with highlighted code, and drops what could run script or load a file from elsewhere', async () => {
    expect((await callApi(service, 'POST', '/v1/models', {model_engine: 'llama.cpp', model_name: 'tiny-random-llm'})).status).to.equal(200)
    try {
      // The page's Content-Security-Policy refuses the reply's event handler and style even before they are removed, and says so.
      browser = await openBrowser(service.url, {expectedConsoleErrors: [/^(Executing inline event handler|Applying inline style) violates the following Content Security Policy directive/]})
      const {page} = browser
      // Random weights cannot be asked for a given reply: this one stream is written here, in the service's format.
      const reply = '# Title\n\nSome *text*.\n\n```python\nprint("hi")\n```\n\n<img src="http://elsewhere.example/x.png" onerror="window.hacked = 1"><script>window.hacked = 2</script>' +
        '<p style="position:fixed;inset:0;background:url(http://elsewhere.example/bg.png)">cover</p><table background="http://elsewhere.example/t.png"><tr><td>t</td></tr></table>' +
        '<form action="http://elsewhere.example/steal"><input type="password"><input type="image" src="http://elsewhere.example/i.png"></form><svg><image href="http://elsewhere.example/s.png"/></svg>'
      const chunks = reply.match(/[\s\S]{1,12}/g)!.map((content) => `data: ${JSON.stringify({choices: [{delta: {content}, finish_reason: null, index: 0}], id: 'x', model: 'tiny-random-llm', object: 'chat.completion.chunk'})}\n\n`)
      await page.route('**/v1/chat/completions', (route) => route.fulfill({body: `${chunks.join('')}data: [DONE]\n\n`, contentType: 'text/event-stream'}))
      await page.goto(`${service.url}/ui/playground/tiny-random-llm`)
      await page.getByRole('textbox', {name: 'Message'}).fill('Show me')
      await page.getByRole('button', {name: 'Send'}).click()
      const markdown = page.locator('.messages li.assistant:not(.streaming) .markdown')
      await markdown.locator('h1', {hasText: 'Title'}).waitFor()
      expect(await markdown.locator('em').textContent()).to.equal('text')
      await markdown.locator('pre code.hljs .hljs-string').waitFor()
      expect(await markdown.locator('img, script, form, input, svg, [style], [background]').count()).to.equal(0)
      expect(await markdown.locator('p', {hasText: 'cover'}).count(), 'the text stays, without its style').to.equal(1)
      expect(await page.evaluate(() => (window as unknown as {hacked?: number}).hacked)).to.equal(undefined)

      // A reply still streaming when the page is left is stopped: its request is aborted, not left to run to max_tokens.
      await page.route('**/v1/chat/completions', () => {})
      await page.getByRole('textbox', {name: 'Message'}).fill('A long story')
      const aborted = page.waitForEvent('requestfailed', (request) => request.url().endsWith('/v1/chat/completions'))
      await page.getByRole('button', {name: 'Send'}).click()
      await page.getByRole('button', {name: 'Stop'}).waitFor()
      await page.getByRole('link', {name: 'Running models'}).click()
      expect((await aborted).failure()?.errorText).to.equal('net::ERR_ABORTED')
    } finally {
      await callApi(service, 'DELETE', '/v1/models/tiny-random-llm')
    }
  })

  it('keeps the playground\'s model picker current without a reload: a model launched after the page opened appears, a terminated one goes, and a request to it shows the service\'s error', async () => {
    browser = await openBrowser(service.url, {expectedStatuses: [404]})
    const {page} = browser
    await page.goto(`${service.url}/ui/playground`)
    await page.getByText('No model is ready.').waitFor()
    // Gone after a reload: the checks at the end show the page was never loaded again.
    await page.evaluate(() => ((window as unknown as {sameLoad: boolean}).sameLoad = true))
    const picker = page.getByRole('combobox', {name: 'Model'})
    try {
      expect((await callApi(service, 'POST', '/v1/models', {model_engine: 'llama.cpp', model_name: 'tiny-random-llm'})).status).to.equal(200)
      await picker.click()
      await picker.locator('option', {hasText: 'tiny-random-llm (LLM)'}).waitFor({state: 'attached'})
      await picker.selectOption('tiny-random-llm')
      await page.getByRole('textbox', {name: 'Message'}).fill('Are you there?')

      expect((await callApi(service, 'DELETE', '/v1/models/tiny-random-llm')).status).to.equal(200)
      // Headless Chromium's tab never hides, so the event a tab shown again sends is sent here.
      await page.evaluate(() => document.dispatchEvent(new Event('visibilitychange')))
      await page.getByRole('alert').filter({hasText: 'tiny-random-llm is no longer running'}).waitFor()
      expect(await picker.locator('option:not([disabled])').count()).to.equal(0)
      expect(await picker.inputValue(), 'the gone model stays shown as chosen').to.equal('tiny-random-llm')

      await page.getByRole('button', {name: 'Send'}).click()
      await page.getByRole('alert').filter({hasText: 'model "tiny-random-llm" is not running'}).waitFor()
      expect(await page.locator('.messages li.assistant').count()).to.equal(0)
      expect(await page.evaluate(() => (window as unknown as {sameLoad?: boolean}).sameLoad)).to.equal(true)
    } finally {
      await callApi(service, 'DELETE', '/v1/models/tiny-random-llm')
    }
  })

  it('lists the worker of the cluster, and the cached versions with their size, deleting one', async () => {
    browser = await openBrowser(service.url)
    const {page} = browser
    await page.goto(`${service.url}/ui/cluster`)
    expect(await page.getByRole('row', {name: /^local/}).textContent()).to.contain('in this process').and.contain('ready')

    await page.getByRole('link', {name: 'Cache'}).click()
    const version = 'tiny-random-llm--0_0001B--ggufv2--f32'
    const row = page.getByRole('row', {name: new RegExp(`^${version}`)})
    expect(await row.textContent()).to.match(/tiny-random-llm.*ggufv2.*f32\d[\d.]* kB.*generated.*complete.*local/)
    await page.getByRole('button', {name: `Delete ${version}`}).click()
    await page.getByText('No weights are cached yet').waitFor()
    expect((await callApi(service, 'GET', '/v1/cache/models')).body.list).to.deep.equal([])
  })

  it('registers a custom model with the form, refusing a bad name first, and unregisters it', async () => {
    browser = await openBrowser(service.url)
    const {page} = browser
    await page.goto(`${service.url}/ui/register`)
    await page.getByRole('textbox', {exact: true, name: 'Name'}).fill('not a name!')
    await page.getByRole('textbox', {name: /^Size in billions/}).fill('0_5')
    await page.getByRole('combobox', {name: 'Where'}).selectOption('hub')
    await page.getByRole('textbox', {name: 'Repository (owner/name)'}).fill('someone/custom-GGUF')
    await page.getByRole('textbox', {name: /^File name template/}).fill('custom-{quantization}.gguf')
    await page.getByRole('button', {name: 'Register'}).click()
    await page.getByText('model_name must be letters, digits').waitFor()
    expect(await page.getByRole('textbox', {exact: true, name: 'Name'}).getAttribute('aria-invalid')).to.equal('true')

    await page.getByRole('textbox', {exact: true, name: 'Name'}).fill('my-custom-llm')
    expect(JSON.parse(await page.getByRole('textbox', {name: /^JSON sent to/}).inputValue())).to.deep.include({model_name: 'my-custom-llm'})
    await page.getByRole('button', {name: 'Register'}).click()
    await page.getByText('Registered my-custom-llm as a LLM model').waitFor()
    const registered = await callApi(service, 'GET', '/v1/model_registrations/LLM/my-custom-llm')
    expect(registered.body.model_specs).to.deep.equal([
      {model_file_name_template: 'custom-{quantization}.gguf', model_format: 'ggufv2', model_hub: 'huggingface', model_id: 'someone/custom-GGUF', model_size_in_billions: '0_5', quantization: 'q4_k_m'},
    ])

    await page.getByRole('button', {name: 'Unregister my-custom-llm'}).click()
    await page.getByText('None yet.').waitFor()
    expect((await callApi(service, 'GET', '/v1/model_registrations/LLM/my-custom-llm')).status).to.equal(404)
  })
})

describe('web interface with access control (service-local --auth-config, headless Chromium)', function () {
  this.timeout(120_000)
  let service: RunningService
  let browser: BrowserSession | undefined

  before(async () => {
    await ensureChromium()
    service = await startService({args: ['--auth-config', await writeTestAuthConfig(await temporaryDirectory())]})
  })

  after(async () => {
    await browser?.close()
    await service?.stop()
  })

  it('serves the app without credentials while the API still asks for them', async () => {
    expect((await fetch(`${service.url}/ui/models`)).status).to.equal(200)
    expect((await fetch(`${service.url}/v1/models`)).status).to.equal(401)
    expect((await fetch(`${service.url}/v1/models`, {headers: {authorization: `Bearer ${apiKeyOf('root')}`}})).status).to.equal(200)
  })

  it('sends a visitor to the login page, logs in, names the permission an action lacks, and logs out', async () => {
    browser = await openBrowser(service.url, {expectedStatuses: [403]})
    const {page} = browser
    await page.goto(`${service.url}/ui/models`)
    await page.waitForURL(`${service.url}/ui/login?next=%2Fui%2Fmodels`)
    const user = 'all-but-models:register'
    await page.getByRole('textbox', {name: 'Username'}).fill(user)
    await page.getByLabel('Password').fill(passwordOf(user))
    await page.getByRole('button', {name: 'Log in'}).click()
    await page.waitForURL(`${service.url}/ui/models`)
    await page.getByText('No model runs.').waitFor()
    expect(await page.evaluate(() => Object.keys(sessionStorage))).to.deep.equal(['service-toolkit.token'])

    await page.getByRole('link', {name: 'Register'}).click()
    await page.getByRole('textbox', {exact: true, name: 'Name'}).fill('refused-llm')
    await page.getByRole('textbox', {name: /^Size in billions/}).fill('7')
    await page.getByRole('textbox', {name: /^File/}).fill('/models/refused.gguf')
    await page.getByRole('button', {name: 'Register'}).click()
    const refusal = await page.getByRole('alert').textContent()
    expect(refusal).to.contain('Permission denied').and.contain(`user "${user}" does not have the permission models:register`)
    browser.check()

    const loggedIn = await page.evaluate(() => sessionStorage.getItem('service-toolkit.token'))
    await page.getByRole('button', {name: 'Log out'}).click()
    await page.waitForURL(`${service.url}/ui/login`)
    expect(await page.evaluate(() => Object.keys(sessionStorage))).to.deep.equal([])
    const revoked = await fetch(`${service.url}/v1/models`, {headers: {authorization: `Bearer ${loggedIn}`}})
    expect((await revoked.json()).error, 'the token is revoked at the service').to.include({code: 'token_revoked'})
    await page.goto(`${service.url}/ui/cache`)
    await page.waitForURL(`${service.url}/ui/login?next=%2Fui%2Fcache`)
    browser.check()
  })

  it('asks for a login again when the service refuses the token (expired, or signed before a restart with another secret)', async () => {
    await browser?.close()
    browser = await openBrowser(service.url, {expectedStatuses: [401]})
    const {page} = browser
    await page.goto(`${service.url}/ui/login`)
    await page.evaluate(() => sessionStorage.setItem('service-toolkit.token', 'not-a-token-the-service-signed'))
    await page.goto(`${service.url}/ui/models`)
    await page.waitForURL(`${service.url}/ui/login?next=%2Fui%2Fmodels`)
    await page.getByText('Your session ended').waitFor()
    expect(await page.evaluate(() => Object.keys(sessionStorage))).to.deep.equal([])
    browser.check()
  })
})

describe('web interface launch progress (service-local with a local hub, headless Chromium)', function () {
  this.timeout(120_000)
  let service: RunningService
  let hub: FakeHub
  let half: number
  let browser: BrowserSession | undefined

  before(async () => {
    await ensureChromium()
    const file = join(await temporaryDirectory(), 'tiny.gguf')
    half = Math.floor((await writeRandomLlamaGguf(file)).bytes / 2)
    hub = await FakeHub.start()
    await hub.addRepo('test-org/web-GGUF', {'web-q4_0.gguf': file})
    service = await startService({env: {HF_ENDPOINT: hub.url, MODELSCOPE_ENDPOINT: hub.url}})
    const model = {
      context_length: 2048,
      model_ability: ['chat'],
      model_name: 'web-tiny',
      model_specs: [{model_format: 'ggufv2', model_size_in_billions: '0_5', model_src: {huggingface: {model_file_name_template: 'web-{quantization}.gguf', model_id: 'test-org/web-GGUF', quantizations: ['q4_0']}}}],
    }
    expect((await callApi(service, 'POST', '/v1/model_registrations/LLM', {model, persist: false})).status).to.equal(200)
  })

  after(async () => {
    await browser?.close()
    await service?.stop()
    await hub?.stop()
  })

  it('shows a download with its bytes, speed and time left, and cancels it', async () => {
    const hold = hub.hold('web-q4_0.gguf', half)
    try {
      browser = await openBrowser(service.url, {failingPaths: ['/v1/models/web-tiny/progress']})
      const {page} = browser
      await page.goto(`${service.url}/ui/`)
      await page.getByRole('button', {name: 'Configure web-tiny'}).click()
      await page.getByRole('form', {name: 'Launch web-tiny'}).getByRole('button', {name: 'Launch'}).click()
      await page.locator('[data-stage="downloading"]').waitFor()
      // A poll the network drops shows that, and the next one takes over.
      await page.route('**/progress', (route) => route.abort(), {times: 1})
      await page.getByRole('alert').waitFor()
      await page.getByText(/[\d.]+ kB of [\d.]+ kB · [\d.]+ k?B\/s · .+ left · huggingface: test-org\/web-GGUF/).waitFor()
      await page.getByRole('alert').waitFor({state: 'detached'})
      await page.getByRole('button', {name: 'Cancel launch'}).click()
      await page.locator('[data-stage="cancelled"]').waitFor()
      expect((await callApi(service, 'GET', '/v1/models')).body.data).to.deep.equal([])
      browser.check()
    } finally {
      hold.release()
    }
  })
})
