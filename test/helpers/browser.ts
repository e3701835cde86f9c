/**
 * Headless Chromium (the Debian package, driven by playwright-core, which downloads no browser) for tests of the
 * web interface. A page fails its test on any console error, uncaught exception or request to a host other than
 * the service's: `check()` throws what was seen. Each test gets a fresh context (its own cookies, storage and
 * permissions) in a browser launched once a test file for each set of flags: launching Chromium for every test
 * cost 1.1 CPU-s against 0.5 for a context, about 55 times a run.
 */
import {execa} from 'execa'
import {existsSync} from 'node:fs'
import {join} from 'node:path'
import {type Browser, type BrowserContext, chromium, type Page} from 'playwright-core'

import {ROOT} from './service.js'

export const CHROMIUM = '/usr/bin/chromium'

/**
 * As root Chromium needs --no-sandbox; the rest keep it from calling home (updates, sync, safe browsing, field
 * trials), which on a closed network would stall or flood it, and from doing first-run work.
 */
const FLAGS = [
  '--no-sandbox',
  '--headless',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  '--disable-default-apps',
  '--disable-dev-shm-usage',
  '--disable-features=Translate,OptimizationHints,MediaRouter',
]

/** Installs the browser where it is missing (scripts/ensure-chromium.sh, idempotent). */
export async function ensureChromium(): Promise<void> {
  if (!existsSync(CHROMIUM)) await execa('bash', [join(ROOT, 'scripts/ensure-chromium.sh')], {stdio: 'inherit'})
}

export interface BrowserSession {
  page: Page
  context: BrowserContext
  /** Throws the console errors, page errors and requests to other hosts seen since the last check. */
  check(): void
  close(): Promise<void>
}

export interface BrowserOptions {
  /** HTTP statuses the test provokes on purpose (a 403 it checks the message of): Chromium logs them as console errors. */
  expectedStatuses?: number[]
  viewport?: {width: number; height: number}
  /** More Chromium flags (a fake microphone for the recording tests). */
  args?: string[]
  /** Paths whose requests the test makes fail on purpose: Chromium logs each failure as a console error. */
  failingPaths?: string[]
  /** Console errors the test provokes on purpose (the page's Content-Security-Policy refusing what a hostile reply carries). */
  expectedConsoleErrors?: RegExp[]
  /**
   * false leaves the browser's requests alone, unchecked: while Playwright intercepts requests it answers CORS
   * preflights itself, so a test of the service's answers to them must go without.
   */
  interceptRequests?: boolean
}

/** Browsers of this test process by their extra flags, until the root hook (test/root-hooks.cjs) closes them after the file. */
const browsers = new Map<string, Promise<Browser>>()

async function closeBrowsers(): Promise<void> {
  const open = [...browsers.values()]
  browsers.clear()
  await Promise.all(open.map(async (launching) => (await launching.catch(() => undefined))?.close()))
}

Object.assign(globalThis, {[Symbol.for('service-test.closeBrowsers')]: closeBrowsers})

async function browserWith(args: string[]): Promise<Browser> {
  const key = args.join(' ')
  const running = await browsers.get(key)?.catch(() => undefined)
  if (running?.isConnected()) return running
  await ensureChromium()
  const launching = chromium.launch({args: [...FLAGS, ...args], executablePath: CHROMIUM, headless: true})
  browsers.set(key, launching)
  return launching
}

export async function openBrowser(
  serviceUrl: string,
  {args = [], expectedConsoleErrors = [], expectedStatuses = [], failingPaths = [], interceptRequests = true, viewport = {height: 800, width: 1280}}: BrowserOptions = {},
): Promise<BrowserSession> {
  const context = await (await browserWith(args)).newContext({viewport})
  const origin = new URL(serviceUrl).origin
  const problems: string[] = []
  const expected = new RegExp(`^Failed to load resource: the server responded with a status of (${expectedStatuses.join('|') || 'none'}) `)

  if (interceptRequests)
    await context.route('**/*', (route) => {
      const url = route.request().url()
      if (url.startsWith(`${origin}/`) || url.startsWith('data:') || url.startsWith('blob:')) return route.continue()
      problems.push(`request to another host: ${url}`)
      return route.abort('blockedbyclient')
    })
  const page = await context.newPage()
  page.on('console', (message) => {
    const provoked = message.text().startsWith('Failed to load resource: net::') && failingPaths.some((path) => message.location().url === `${origin}${path}`)
    const wanted = expected.test(message.text()) || expectedConsoleErrors.some((pattern) => pattern.test(message.text()))
    if (message.type() === 'error' && !wanted && !provoked) problems.push(`console error: ${message.text()} (${message.location().url})`)
  })
  page.on('pageerror', (error) => problems.push(`uncaught: ${error.stack ?? error.message}`))

  return {
    check() {
      const seen = problems.splice(0)
      if (seen.length > 0) throw new Error(`the page had problems:\n${seen.join('\n')}`)
    },
    async close() {
      await context.close()
    },
    context,
    page,
  }
}

/** A test's afterEach for the browser it opened: fails on what the page saw, and closes it either way. */
export async function checkAndClose(browser: BrowserSession | undefined): Promise<void> {
  try {
    browser?.check()
  } finally {
    await browser?.close()
  }
}
