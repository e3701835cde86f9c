/**
 * The web interface's view of an engine's background build, in headless Chromium against real `service-local`
 * processes whose engine-stand-in-build fixture plugin (test/fixtures/plugins) has a build program that compiles
 * nothing: it prints a cmake-like progress line and exits as the test tells it. The service, its routes and its
 * lock are the real ones; only the build program stands in for llama.cpp's ten-minute build.
 */
import {expect} from 'chai'
import {mkdir, mkdtemp, rm, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import {type BrowserSession, checkAndClose, ensureChromium, openBrowser} from '../helpers/browser.js'
import {callApi, ROOT, type RunningService, servicectl, startService, temporaryDirectory} from '../helpers/service.js'

const FIXTURE = join(ROOT, 'test/fixtures/plugins/engine-stand-in-build')

describe('web interface: an engine\'s background build (stand-in build program, headless Chromium)', function () {
  this.timeout(120_000)
  let work: string
  let service: RunningService | undefined
  let browser: BrowserSession | undefined

  /** A service with the fixture linked, building the stand-in into `folder`. */
  async function serviceFor(folder: string): Promise<RunningService> {
    const home = await mkdtemp(join(work, 'home-'))
    const linked = await servicectl(['plugins', 'link', FIXTURE, '--no-install'], {env: {SERVICE_HOME: home}})
    expect(linked.exitCode, linked.stderr).to.equal(0)
    return startService({env: {SERVICE_AUTO_BUILD: 'stand-in-build', STAND_IN_BUILD_FOLDER: folder}, home})
  }

  before(async () => {
    await ensureChromium()
    work = await temporaryDirectory('service-web-build-')
  })

  afterEach(async () => {
    const opened = browser
    browser = undefined
    await checkAndClose(opened)
    await service?.stop()
    service = undefined
  })

  after(async () => rm(work, {force: true, recursive: true}))

  it('shows a build on the launch page with its progress, through a failed poll, then its failure with the reason, the log file and the last lines', async () => {
    const folder = join(work, 'fails')
    await mkdir(folder, {recursive: true})
    service = await serviceFor(folder)
    browser = await openBrowser(service.url, {failingPaths: ['/v1/engine-builds']})
    const {page} = browser
    await page.goto(`${service.url}/ui/`)
    const builds = page.getByRole('region', {name: 'Engine builds'})
    await builds.getByText('stand-in-build is being built for this machine in the background: 50% (compiling). Models launched before it ends use the current binaries.').waitFor()
    expect(await builds.getByRole('progressbar', {name: 'Build of stand-in-build'}).getAttribute('value')).to.equal('50')

    // A poll that fails (the service briefly unreachable) leaves the panel asking again while the build runs.
    const failedPoll = page.waitForEvent('requestfailed', (request) => request.url().endsWith('/v1/engine-builds'))
    await page.route('**/v1/engine-builds', (route) => route.abort(), {times: 1})
    await failedPoll
    await writeFile(join(folder, 'finish'), '3')
    await builds.getByText('The background build of stand-in-build failed: exit code 3').waitFor()
    const {body} = await callApi(service, 'GET', '/v1/engines/stand-in-build/build')
    expect(body).to.deep.include({error: 'exit code 3', state: 'failed'})
    expect(await builds.textContent()).to.contain(`Its whole output, on the service's machine: ${body.log_file}`).and.contain('servicectl engine build stand-in-build tries again')
    await builds.getByText('Last lines of its output').click()
    expect(await builds.locator('pre').textContent()).to.equal('Cloning the stand-in source (priority 19)\n[ 50%] Building CXX object stand-in.o\nstand-in.cpp:1: error: told to fail')
  })

  it('says which binaries models launched now use once a build has succeeded, and nothing of a build that is off', async () => {
    const folder = join(work, 'succeeds')
    await mkdir(folder, {recursive: true})
    // Told at once: the stand-in ends as soon as it has printed its progress.
    await writeFile(join(folder, 'finish'), '0')
    service = await serviceFor(folder)
    browser = await openBrowser(service.url)
    const {page} = browser
    await page.goto(`${service.url}/ui/`)
    const builds = page.getByRole('region', {name: 'Engine builds'})
    await builds.getByText('stand-in-build was built for this machine in the background. Models launched now use the stand-in build.').waitFor()
    const {body} = await callApi(service, 'GET', '/v1/engine-builds')
    expect(body.data.map(({engine, state}: {engine: string; state: string}) => [engine, state])).to.deep.include.members([
      ['llama.cpp', 'off'],
      ['stand-in-build', 'succeeded'],
    ])
    expect(await builds.textContent()).not.to.contain('llama.cpp')
  })
})
