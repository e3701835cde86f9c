/**
 * The web interface's "From a hub" form (web/src/pages/hub-launch-form.tsx) in headless Chromium, against a real
 * `service-local` whose hub is the local one: a repository named without its host, on the hub chosen beside it, is
 * launched by name to ready; a quantization the repository lacks shows the service's reason.
 */
import {expect} from 'chai'
import {join} from 'node:path'

import {writeRandomLlamaGguf} from '../../plugins/engine-llama-cpp/src/gguf/random-llama.js'
import {type BrowserSession, ensureChromium, openBrowser} from '../helpers/browser.js'
import {FakeHub} from '../helpers/fake-hub.js'
import {callApi, type RunningService, startService, temporaryDirectory} from '../helpers/service.js'

describe('web interface: launching a hub model by name (service-local with a local hub, headless Chromium)', function () {
  this.timeout(120_000)
  let service: RunningService
  let hub: FakeHub
  let browser: BrowserSession | undefined

  before(async () => {
    await ensureChromium()
    const file = join(await temporaryDirectory(), 'tiny.gguf')
    await writeRandomLlamaGguf(file)
    hub = await FakeHub.start()
    await hub.addRepo('test-org/web-GGUF', {'web-Q4_K_M.gguf': file, 'web-Q8_0.gguf': file})
    service = await startService({env: {HF_ENDPOINT: hub.url, MODELSCOPE_ENDPOINT: hub.url}})
  })

  after(async () => {
    await browser?.close()
    await service?.stop()
    await hub?.stop()
  })

  it('launches test-org/web-GGUF:Q8_0 from ModelScope to ready, and shows why a missing quantization is refused', async () => {
    browser = await openBrowser(service.url, {expectedConsoleErrors: [/400 \(Bad Request\)/], expectedStatuses: [400]})
    const {page} = browser
    await page.goto(`${service.url}/ui/`)
    const form = page.getByRole('form', {name: 'Launch from a hub'})
    await form.getByLabel('Hub model').fill('test-org/web-GGUF:Q3_K_S')
    await form.getByLabel('Download from').selectOption('modelscope')
    await form.getByRole('button', {name: 'Launch modelscope.cn/test-org/web-GGUF:Q3_K_S'}).click()
    await form.getByText('modelscope.cn/test-org/web-gguf has no quantization "Q3_K_S"; it has: Q4_K_M, Q8_0.').waitFor()

    await form.getByLabel('Hub model').fill('test-org/web-GGUF:Q8_0')
    await form.getByRole('button', {name: 'Launch modelscope.cn/test-org/web-GGUF:Q8_0'}).click()
    await page.locator('[data-stage="ready"]').waitFor()
    const running = (await callApi(service, 'GET', '/v1/models')).body.data
    expect(running.map((model: {id: string; model_name: string}) => [model.id, model.model_name])).to.deep.equal([['ms--test-org--web-GGUF--Q8_0', 'ms--test-org--web-GGUF--Q8_0']])
    expect(hub.requests.map((request) => request.url)).to.include('/api/v1/models/test-org/web-GGUF/repo/files?Revision=master&Recursive=true')
    browser.check()
  })
})
