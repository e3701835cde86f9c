/**
 * `npm run bench:web`: the web interface's speed in headless Chromium against a real `service-local`:
 *   - first page usable: from navigation to the catalogue's first "Configure" button, with a cold cache (fresh
 *     profile each time) and warm (reloads), medians of several loads; first contentful paint beside it;
 *   - a 1,000-token streamed chat reply from tiny-random-llm (the fastest model, so the most tokens per frame):
 *     its long tasks (over 50 ms, which would block input) and the slowest keystroke typed into the message box
 *     while it streams, measured by the browser's Event Timing (key press to the next paint);
 *   - the JavaScript and CSS the page loads, gzip-compressed.
 * `-- --screenshots docs/screenshots` also saves the screenshots of the main pages that docs/web-ui.md shows.
 */
import {mkdir} from 'node:fs/promises'
import {join} from 'node:path'
import {parseArgs} from 'node:util'
import {gzipSync} from 'node:zlib'

import {openBrowser} from '../test/helpers/browser.js'
import {callApi, startService, temporaryDirectory} from '../test/helpers/service.js'
import {writeTestAuthConfig} from '../test/helpers/auth.js'

const {values: options} = parseArgs({options: {loads: {default: '7', type: 'string'}, screenshots: {type: 'string'}, tokens: {default: '1000', type: 'string'}}})
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]
const ms = (value: number) => `${value.toFixed(0)} ms`

/** Records, from the first script on, when the first catalogue entry can be acted on. */
const MARK_USABLE = () => {
  new MutationObserver((_, observer) => {
    if (document.querySelector('button[aria-label^="Configure"]')) {
      ;(window as unknown as {usableAt: number}).usableAt = performance.now()
      observer.disconnect()
    }
  }).observe(document, {childList: true, subtree: true})
}

const service = await startService()
try {
  const cold: number[] = []
  const warm: number[] = []
  const paints: number[] = []
  let bytes = 0
  for (let load = 0; load < Number(options.loads); load++) {
    const browser = await openBrowser(service.url)
    await browser.context.addInitScript(MARK_USABLE)
    const assets: string[] = []
    browser.page.on('response', (response) => /\/ui\/assets\/.*\.(js|css)$/.test(response.url()) && assets.push(response.url()))
    for (const [index, times] of [cold, warm].entries()) {
      if (index === 0) await browser.page.goto(`${service.url}/ui/`)
      else await browser.page.reload()
      await browser.page.waitForFunction(() => (window as unknown as {usableAt?: number}).usableAt !== undefined)
      times.push(await browser.page.evaluate(() => (window as unknown as {usableAt: number}).usableAt))
      if (index === 0) paints.push(await browser.page.evaluate(() => performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? Number.NaN))
    }

    if (load === 0) for (const url of new Set(assets)) bytes += gzipSync(Buffer.from(await (await fetch(url)).arrayBuffer()), {level: 9}).length
    browser.check()
    await browser.close()
  }

  console.log(`first page usable, cold cache: ${ms(median(cold))} median (${ms(Math.min(...cold))}–${ms(Math.max(...cold))}); first contentful paint ${ms(median(paints))}`)
  console.log(`first page usable, warm cache: ${ms(median(warm))} median (${ms(Math.min(...warm))}–${ms(Math.max(...warm))})`)
  console.log(`JavaScript and CSS loaded: ${(bytes / 1000).toFixed(1)} kB gzip-compressed`)

  const launched = await callApi(service, 'POST', '/v1/models', {model_engine: 'llama.cpp', model_name: 'tiny-random-llm'})
  if (launched.status !== 200) throw new Error(JSON.stringify(launched.body))
  const browser = await openBrowser(service.url)
  const {page} = browser
  await page.goto(`${service.url}/ui/playground/tiny-random-llm`)
  await page.getByRole('spinbutton', {name: 'Max tokens'}).fill(options.tokens)
  // The baseline: the same typing with nothing streaming, on a machine whose two cores the model shares.
  const idle = await typeAndMeasure(page, async (typed) => typed < 40)
  await page.getByRole('textbox', {name: 'Message'}).fill('Tell me a long story.')
  // Chromium's own count of the renderer's main-thread time (scripts, style, layout), through the DevTools protocol.
  const devtools = await page.context().newCDPSession(page)
  await devtools.send('Performance.enable')
  const busy = async () => {
    const {metrics} = await devtools.send('Performance.getMetrics')
    const value = (name: string) => (metrics.find((metric) => metric.name === name)?.value ?? 0) * 1000
    return {layout: value('LayoutDuration') + value('RecalcStyleDuration'), script: value('ScriptDuration'), task: value('TaskDuration')}
  }

  const before = await busy()
  const started = performance.now()
  await page.getByRole('button', {name: 'Send'}).click()
  await page.locator('.messages li.streaming').waitFor()
  const streaming = await typeAndMeasure(page, async () => (await page.locator('.messages li.streaming').count()) > 0)
  const streamMs = performance.now() - started
  const after = await busy()
  const reply = (await page.locator('.messages li.assistant').last().textContent()) ?? ''
  console.log(`${options.tokens}-token streamed reply (${reply.length} characters) in ${ms(streamMs)}`)
  console.log(`  the page's main thread meanwhile: busy ${ms(after.task - before.task)} (scripts ${ms(after.script - before.script)}, style and layout ${ms(after.layout - before.layout)})`)
  console.log(`  typing while it streams: ${streaming}`)
  console.log(`  typing with nothing streaming: ${idle}`)
  if (options.screenshots) await screenshots(options.screenshots, page)
  browser.check()
  await browser.close()
} finally {
  await service.stop()
}

async function screenshots(folder: string, page: import('playwright-core').Page) {
  await mkdir(folder, {recursive: true})
  const shot = (name: string) => page.screenshot({path: join(folder, `${name}.png`)})
  await page.getByRole('button', {name: 'Clear'}).click()
  await page.getByRole('spinbutton', {name: 'Max tokens'}).fill('40')
  await page.getByRole('textbox', {name: 'System prompt'}).fill('You are a helpful assistant.')
  await page.getByRole('textbox', {name: 'Message'}).fill('Write a haiku about model servers.')
  await page.getByRole('button', {name: 'Send'}).click()
  await page.locator('.messages li.assistant:not(.streaming)').waitFor()
  await page.getByText('Code for this request').click()
  await shot('chat')
  await page.goto(`${service.url}/ui/`)
  await page.getByRole('button', {name: 'Configure tiny-random-llm'}).click()
  await page.getByText(/Memory estimate: \d/).waitFor()
  await shot('launch')
  await page.goto(`${service.url}/ui/models`)
  await page.getByRole('button', {name: 'Events'}).click()
  await page.getByRole('region', {name: /^Events of/}).getByText('ready', {exact: true}).waitFor()
  await shot('models')
  await page.goto(`${service.url}/ui/register`)
  await page.getByRole('textbox', {exact: true, name: 'Name'}).fill('my-model')
  await shot('register')
  await page.goto(`${service.url}/ui/cache`)
  await page.locator('table').waitFor()
  await shot('cache')
  await page.goto(`${service.url}/ui/cluster`)
  await page.locator('table').waitFor()
  await shot('cluster')
  const secured = await startService({args: ['--auth-config', await writeTestAuthConfig(await temporaryDirectory())]})
  const browser = await openBrowser(secured.url)
  try {
    await browser.page.goto(`${secured.url}/ui/`)
    await browser.page.getByRole('button', {name: 'Log in'}).waitFor()
    await browser.page.screenshot({path: join(folder, 'login.png')})
    browser.check()
  } finally {
    await browser.close()
    await secured.stop()
  }
}

/**
 * Types into the focused message box while `going(typed)` holds, and answers what the browser measured meanwhile:
 * long tasks (over 50 ms), and per key event its input delay (main thread busy) and its time to the next paint.
 */
async function typeAndMeasure(page: import('playwright-core').Page, going: (typed: number) => Promise<boolean>): Promise<string> {
  await page.getByRole('textbox', {name: 'Message'}).focus()
  await page.evaluate(() => {
    const seen = ((window as unknown as {seen: Seen}).seen = {events: [], longTasks: [], observers: []})
    const tasks = new PerformanceObserver((list) => seen.longTasks.push(...list.getEntries().map((entry) => entry.duration)))
    tasks.observe({type: 'longtask'})
    const events = new PerformanceObserver((list) =>
      seen.events.push(...(list.getEntries() as PerformanceEventTiming[]).filter((entry) => entry.name.startsWith('key')).map((entry): [number, number] => [entry.processingStart - entry.startTime, entry.duration])),
    )
    events.observe({durationThreshold: 16, type: 'event'} as PerformanceObserverInit)
    seen.observers = [tasks, events]
  })
  let typed = 0
  while (await going(typed)) {
    await page.keyboard.type('abcd', {delay: 10})
    typed += 4
  }

  await page.waitForTimeout(300)
  const seen = await page.evaluate(() => {
    const {events, longTasks, observers} = (window as unknown as {seen: Seen}).seen
    for (const observer of observers) observer.disconnect()
    return {events, longTasks}
  })
  const slowest = (values: number[]) => ms(Math.max(0, ...values))
  return `${typed} characters, ${seen.longTasks.length} long tasks (longest ${slowest(seen.longTasks)}), slowest key event: input delay ${slowest(seen.events.map(([delay]) => delay))}, to paint ${slowest(seen.events.map(([, duration]) => duration))}`
}

interface Seen {
  events: Array<[number, number]>
  longTasks: number[]
  observers: PerformanceObserver[]
}
