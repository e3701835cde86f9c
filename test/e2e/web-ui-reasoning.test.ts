/**
 * The chat playground with a reasoning model, in headless Chromium against a real `service-local`: the thinking
 * (`reasoning_content` deltas) shows folded above the answer, opens on a click, and is not sent back with the
 * conversation.
 */
import {expect} from 'chai'

import {type BrowserSession, checkAndClose, ensureChromium, openBrowser} from '../helpers/browser.js'
import {callApi, closedPort, type RunningService, startService} from '../helpers/service.js'

describe('web interface: reasoning in the chat playground (service-local, headless Chromium)', function () {
  this.timeout(120_000)
  let service: RunningService
  let browser: BrowserSession | undefined

  before(async () => {
    await ensureChromium()
    const unreachable = `http://127.0.0.1:${await closedPort()}`
    service = await startService({env: {HF_ENDPOINT: unreachable, MODELSCOPE_ENDPOINT: unreachable}})
    expect((await callApi(service, 'POST', '/v1/models', {model_engine: 'llama.cpp', model_name: 'tiny-random-llm'})).status).to.equal(200)
  })

  after(async () => {
    await checkAndClose(browser)
    await service?.stop()
  })

  it('shows the thinking folded above the answer, and sends only the answer back', async () => {
    browser = await openBrowser(service.url)
    const {page} = browser
    // Random weights cannot be asked to think: this stream is written here, in the service's format, as a reasoning
    // model's (reasoning_content deltas, then content deltas).
    const delta = (fields: Record<string, string>) =>
      `data: ${JSON.stringify({choices: [{delta: fields, finish_reason: null, index: 0}], id: 'x', model: 'tiny-random-llm', object: 'chat.completion.chunk'})}\n\n`
    const stream = [delta({content: '', role: 'assistant'}), delta({reasoning_content: 'Two and two '}), delta({reasoning_content: 'make four.'}), delta({content: 'It is **4**.'})]
    const sent: unknown[] = []
    await page.route('**/v1/chat/completions', (route) => {
      sent.push(route.request().postDataJSON())
      return route.fulfill({body: `${stream.join('')}data: [DONE]\n\n`, contentType: 'text/event-stream'})
    })
    await page.goto(`${service.url}/ui/playground/tiny-random-llm`)
    await page.getByRole('textbox', {name: 'Message'}).fill('What is 2+2?')
    await page.getByRole('button', {name: 'Send'}).click()

    const answer = page.locator('.messages li.assistant:not(.streaming)')
    await answer.locator('.markdown strong', {hasText: '4'}).waitFor()
    const thinking = answer.locator('details.reasoning')
    expect(await thinking.evaluate((details) => (details as HTMLDetailsElement).open), 'folded').to.equal(false)
    expect(await thinking.locator('summary').textContent()).to.equal('Thinking')
    expect(await thinking.locator('.reasoning-text').isVisible()).to.equal(false)
    await thinking.locator('summary').click()
    expect(await thinking.locator('.reasoning-text').textContent()).to.equal('Two and two make four.')
    const answerFollows = await answer.evaluate((item) => Boolean(item.querySelector('details.reasoning')!.compareDocumentPosition(item.querySelector('.markdown')!) & Node.DOCUMENT_POSITION_FOLLOWING))
    expect(answerFollows, 'the thinking is above the answer').to.equal(true)

    await page.getByRole('textbox', {name: 'Message'}).fill('And 3+3?')
    await page.getByRole('button', {name: 'Send'}).click()
    await page.locator('.messages li.assistant:not(.streaming)').nth(1).waitFor()
    expect((sent[1] as {messages: unknown[]}).messages).to.deep.equal([
      {content: 'What is 2+2?', role: 'user'},
      {content: 'It is **4**.', role: 'assistant'},
      {content: 'And 3+3?', role: 'user'},
    ])
  })
})
