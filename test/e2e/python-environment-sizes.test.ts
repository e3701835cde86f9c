/**
 * Python environments share what they have in common: on a machine without uv on PATH, the service installs uv from
 * PyPI into its environments' folder, and uv hard-links the package files from its cache there into each
 * environment, so two environments with the same large package (numpy here, torch in real use) take little more
 * than the larger alone. `servicectl virtualenvs` and the web interface's Cache page show each one's size and the
 * part it shares. Real installs from
 * the machine's package sources, through a real service and the engine-python-echo fixture.
 */
import {expect} from 'chai'
import {execa} from 'execa'
import {existsSync} from 'node:fs'
import {readdir, rm, writeFile} from 'node:fs/promises'
import {join} from 'node:path'
import {pathToFileURL} from 'node:url'

import {checkAndClose, ensureChromium, openBrowser} from '../helpers/browser.js'
import {callApi, ROOT, type RunningService, servicectl, startService, temporaryDirectory} from '../helpers/service.js'

const FIXTURE = join(ROOT, 'test/fixtures/plugins/engine-python-echo')

/** Bytes `du` finds under the folders, a hard-linked file counted once across all of them. */
const diskBytes = async (...folders: string[]) => Number((await execa('du', ['-s', '-b', '-c', ...folders])).stdout.trim().split('\n').at(-1)!.split('\t')[0])

describe('Python environments share package files (uv from PyPI when none is on PATH, hard links from its cache)', function () {
  this.timeout(10 * 60_000)
  let home: string
  let service: RunningService

  before(async () => {
    home = await temporaryDirectory('service-pyenv-sizes-')
    const linked = await servicectl(['plugins', 'link', FIXTURE, '--no-install'], {env: {SERVICE_HOME: home}})
    expect(linked.exitCode, linked.stderr).to.equal(0)
    const withoutUv = (process.env.PATH ?? '').split(':').filter((folder) => !existsSync(join(folder, 'uv'))).join(':')
    service = await startService({env: {PATH: withoutUv}, home})
    const weights = join(home, 'echo-weights.txt')
    await writeFile(weights, 'stand-in weights\n')
    for (const [name, packages] of [
      ['py-numpy', ['numpy']],
      ['py-numpy-idna', ['numpy', 'idna']],
    ] as const) {
      const model = {model_ability: ['chat'], model_name: name, model_specs: [{model_format: 'echo', model_size_in_billions: 0, model_uri: pathToFileURL(weights).href, quantization: 'none'}], virtualenv: {packages}}
      expect((await callApi(service, 'POST', '/v1/model_registrations/LLM', {model, persist: false})).status).to.equal(200)
    }
  })

  after(async () => {
    await service?.stop()
    if (home) await rm(home, {force: true, recursive: true})
  })

  it('two environments with numpy take together at most 1.5 times the larger, and the listing shows their sizes', async () => {
    for (const [name, uid, require] of [
      ['py-numpy', 'numpy-a', 'numpy'],
      ['py-numpy-idna', 'numpy-b', 'numpy,idna'],
    ]) {
      const launched = await callApi(service, 'POST', '/v1/models', {model_engine: 'python-echo', model_name: name, model_uid: uid, require})
      expect(launched.status, JSON.stringify(launched.body)).to.equal(200)
    }

    const root = join(home, 'virtualenv')
    expect(existsSync(join(root, '.uv', 'bin', 'uv'))).to.equal(true)
    const folders = (await readdir(root)).filter((name) => name.startsWith('py')).map((name) => join(root, name))
    expect(folders).to.have.length(2)
    const alone = await Promise.all(folders.map((folder) => diskBytes(folder)))
    expect(Math.min(...alone)).to.be.above(10_000_000)
    expect(await diskBytes(...folders)).to.be.at.most(1.5 * Math.max(...alone))

    const listed = await servicectl(['virtualenvs', '--json', '-e', service.url])
    expect(listed.exitCode, listed.stderr).to.equal(0)
    const environments = JSON.parse(listed.stdout) as Array<{installer: string; size_bytes: number; shared_bytes: number; disk_bytes: number}>
    expect(environments.map((environment) => environment.installer)).to.deep.equal(['uv', 'uv'])
    for (const environment of environments) expect(environment.shared_bytes).to.be.above(0.5 * environment.size_bytes)
    const together = environments.reduce((sum, environment) => sum + environment.disk_bytes, 0)
    expect(together).to.be.at.most(1.5 * Math.max(...environments.map((environment) => environment.size_bytes)))

    const table = await servicectl(['virtualenvs', '-e', service.url])
    expect(table.stdout).to.match(/Name\s+Python\s+Installer\s+Size\s+Shared\s+Models/)
    expect(table.stdout).to.match(/2 environments, \d[\d.]* MB on disk in all \(\d[\d.]* MB if none shared a file\)\./)
  })

  it("the web interface's Cache page lists the environments with their size and the part they share", async () => {
    await ensureChromium()
    const browser = await openBrowser(service.url)
    try {
      await browser.page.goto(`${service.url}/ui/cache`)
      await browser.page.getByRole('heading', {name: 'Python environments'}).waitFor()
      const rows = browser.page.getByRole('row').filter({hasText: 'numpy'})
      await rows.first().waitFor()
      expect(await rows.count()).to.equal(2)
      for (const row of await rows.all()) expect(await row.getByRole('cell').allTextContents()).to.satisfy((cells: string[]) => cells.filter((cell) => / MB$/.test(cell)).length === 2)
      await browser.page.getByText(/MB on disk in all: files hard-linked into several environments count once\./).waitFor()
    } finally {
      await checkAndClose(browser)
    }
  })
})
