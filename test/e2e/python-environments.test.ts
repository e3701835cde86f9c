/**
 * Virtual environments for engines that run Python, through a real `service-local` and the engine-python-echo
 * fixture (its program imports packages that exist only in the environment the kernel makes for it): made with uv
 * from PyPI, and with Python's venv and pip; reused by a second launch, made once for launches that race, removed
 * when the only launch waiting for it is cancelled, and a package no index has fails the launch with the
 * installer's reason. Real installs from the machine's package sources; nothing is faked.
 */
import {expect} from 'chai'
import {execa} from 'execa'
import {existsSync} from 'node:fs'
import {readdir, readFile, rm, writeFile} from 'node:fs/promises'
import {createServer, type Server} from 'node:http'
import {join} from 'node:path'
import {pathToFileURL} from 'node:url'
import OpenAI from 'openai'

import {type OpenApiDocument, OpenApiChecker} from '../helpers/openapi-checker.js'
import {uvFromPyPI} from '../helpers/python-tools.js'
import {callApi, ROOT, type RunningService, SERVICECTL, servicectl, startService, temporaryDirectory, until} from '../helpers/service.js'

const FIXTURE = join(ROOT, 'test/fixtures/plugins/engine-python-echo')

interface Setup {
  home: string
  service: RunningService
  api(method: string, path: string, body?: unknown): Promise<{status: number; body: any}>
  register(name: string, virtualenv?: unknown): Promise<{status: number; body: any}>
  launch(name: string, uid: string, parameters?: Record<string, unknown>): Promise<{status: number; body: any}>
  environments(): Promise<string[]>
  modelLog(uid: string): Promise<string>
}

/** A service with the fixture linked and a stand-in weights file that registrations point at. */
async function serviceWithFixture(env: Record<string, string>): Promise<Setup> {
  const home = await temporaryDirectory('service-pyenv-')
  const linked = await servicectl(['plugins', 'link', FIXTURE, '--no-install'], {env: {SERVICE_HOME: home}})
  expect(linked.exitCode, linked.stderr).to.equal(0)
  const service = await startService({env, home})
  const weights = join(home, 'echo-weights.txt')
  await writeFile(weights, 'stand-in weights\n')
  const api = (method: string, path: string, body?: unknown) => callApi(service, method, path, body)
  const family = (name: string, virtualenv?: unknown) => ({
    model_ability: ['chat', 'generate'],
    model_name: name,
    model_specs: [{model_format: 'echo', model_size_in_billions: 0, model_uri: pathToFileURL(weights).href, quantization: 'none'}],
    ...(virtualenv === undefined ? {} : {virtualenv}),
  })
  const virtualenvDir = join(home, 'virtualenv')
  return {
    api,
    // uv's cache, and a uv the service installed, live beside the environments.
    environments: async () => (existsSync(virtualenvDir) ? (await readdir(virtualenvDir)).filter((name) => !['.uv', '.uv-cache'].includes(name)).sort() : []),
    home,
    launch: (name, uid, parameters = {}) => api('POST', '/v1/models', {model_engine: 'python-echo', model_name: name, model_uid: uid, ...parameters}),
    modelLog: (uid) => readFile(join(home, 'logs', 'models', `${uid}.log`), 'utf8').catch(() => ''),
    register: (name, virtualenv) => api('POST', '/v1/model_registrations/LLM', {model: family(name, virtualenv), persist: false}),
    service,
  }
}

const kinds = async (setup: Setup, uid: string) => ((await setup.api('GET', `/v1/models/${uid}/events`)).body as Array<{kind: string}>).map((event) => event.kind)
const creations = (setup: Setup, environment: string) => setup.service.output().split(`creating Python environment ${environment} `).length - 1

describe('Python virtual environments for engines that run Python (engine-python-echo + service-local)', function () {
  describe('made with uv from PyPI', () => {
    let setup: Setup
    let index: Server
    /** Answers of the gated index held until the test opens the gate. */
    const held: Array<() => void> = []
    let gateOpen = false

    before(async function () {
      this.timeout(120_000)
      const uv = await uvFromPyPI()
      setup = await serviceWithFixture({PATH: `${uv}:${process.env.PATH}`})
      expect((await setup.register('py-six')).status).to.equal(200)
      expect((await setup.register('py-missing', {packages: ['service-test-no-such-package-qq']})).status).to.equal(200)
      // Two package indexes in front of PyPI: /hang/ never answers, so an installer waits on it until stopped;
      // /gate/ sends the installer on to PyPI only once the test opens the gate, so launches can meet in the making.
      index = createServer((request, response) => {
        const [, mode, ...rest] = (request.url ?? '').split('/')
        const forward = () => response.writeHead(302, {location: `https://pypi.org/${rest.join('/')}`}).end()
        if (mode === 'gate') gateOpen ? forward() : held.push(forward)
      })
      await new Promise<void>((resolve) => index.listen(0, '127.0.0.1', resolve))
      const {port} = index.address() as {port: number}
      const from = (mode: string) => ({index_url: `http://127.0.0.1:${port}/${mode}/simple`, inherit_pip_config: false, packages: ['idna']})
      expect((await setup.register('py-hanging', from('hang'))).status).to.equal(200)
      expect((await setup.register('py-gated', from('gate'))).status).to.equal(200)
    })

    after(async () => {
      index?.closeAllConnections()
      index?.close()
      await setup?.service.stop()
      await rm(setup?.home, {force: true, recursive: true})
    })

    it('a launch makes the environment, and the program runs from it', async () => {
      const launched = await setup.launch('py-six', 'six-a')
      expect(launched.status, JSON.stringify(launched.body)).to.equal(200)
      const [environment] = await setup.environments()
      expect(environment).to.match(/^py3\.\d+\.\d+-[\da-f]{16}$/)
      const record = JSON.parse(await readFile(join(setup.home, 'virtualenv', environment, 'service-environment.json'), 'utf8'))
      expect(record).to.include({bytecode: true, installer: 'uv'})
      expect(record.packages).to.deep.equal(['six'])
      // Compiled at install: model processes read bytecode even where PYTHONDONTWRITEBYTECODE keeps them from writing it.
      const sitePackages = join(setup.home, 'virtualenv', environment, 'lib', `python${record.python.split('.').slice(0, 2).join('.')}`, 'site-packages')
      expect(await readdir(join(sitePackages, '__pycache__'))).to.satisfy((names: string[]) => names.some((name) => name.startsWith('six.') && name.endsWith('.pyc')))
      const log = await setup.modelLog('six-a')
      expect(log).to.contain(`imported six from ${join(setup.home, 'virtualenv', environment)}`)
      expect(log).to.contain(`with prefix ${join(setup.home, 'virtualenv', environment)}, VIRTUAL_ENV ${join(setup.home, 'virtualenv', environment)}`)
      expect(await kinds(setup, 'six-a')).to.include.members(['installing', 'loading', 'ready'])

      const openai = new OpenAI({apiKey: 'unused', baseURL: `${setup.service.url}/v1`, maxRetries: 0})
      const reply = await openai.chat.completions.create({messages: [{content: 'from a virtual environment', role: 'user'}], model: 'six-a'})
      expect(reply.choices[0].message.content).to.equal('from a virtual environment')
    })

    it('a second launch that needs the same packages reuses the environment without installing', async () => {
      const [environment] = await setup.environments()
      expect((await setup.launch('py-six', 'six-b')).status).to.equal(200)
      expect(await setup.environments()).to.deep.equal([environment])
      expect(await kinds(setup, 'six-b')).not.to.include('installing')
      expect(creations(setup, environment)).to.equal(1)
      expect(await setup.modelLog('six-b')).to.contain(`imported six from ${join(setup.home, 'virtualenv', environment)}`)
    })

    it('launches that race for a new set of packages share one making of its environment', async () => {
      const before = await setup.environments()
      const uids = ['both-1', 'both-2', 'both-3']
      const launching = Promise.all(uids.map((uid) => setup.launch('py-gated', uid, {require: 'six,idna'})))
      const stage = async (uid: string) => (await setup.api('GET', `/v1/models/${uid}/progress`)).body?.stage
      await until(async () => ((await Promise.all(uids.map((uid) => stage(uid)))).every((at) => at === 'installing') ? true : undefined), 'every launch to wait for the environment')
      gateOpen = true
      for (const forward of held.splice(0)) forward()
      const launches = await launching
      expect(launches.map((launch) => launch.status)).to.deep.equal([200, 200, 200])
      const made = (await setup.environments()).filter((name) => !before.includes(name))
      expect(made).to.have.length(1)
      expect(creations(setup, made[0])).to.equal(1)
      for (const uid of uids) {
        expect(await kinds(setup, uid)).to.include('installing')
        expect(await setup.modelLog(uid)).to.contain(`imported idna from ${join(setup.home, 'virtualenv', made[0])}`)
      }
    })

    it("a package no index has fails the launch with uv's reason, and leaves nothing behind", async () => {
      const before = await setup.environments()
      const failed = await setup.launch('py-missing', 'missing')
      expect(failed.status).to.equal(500)
      expect(failed.body.error.code).to.equal('launch_failed')
      expect(failed.body.error.message).to.match(/could not create the Python environment for service-test-no-such-package-qq, six: uv pip install exited with code \d+/)
      expect(failed.body.error.message).to.contain('service-test-no-such-package-qq was not found in the package registry')
      expect(await setup.environments()).to.deep.equal(before)
      expect((await setup.api('GET', '/v1/models/missing/progress')).body).to.deep.include({stage: 'error'})
    })

    it('servicectl launch shows the environment being made; cancelling the only launch waiting for it stops the making and removes what was made', async () => {
      const before = await setup.environments()
      const cli = execa('node', [SERVICECTL, 'launch', '-n', 'py-hanging', '--model-engine', 'python-echo', '-u', 'hanging', '-e', setup.service.url], {all: true, reject: false})
      let printed = ''
      cli.all.on('data', (chunk: Buffer) => (printed += chunk.toString()))
      await until(async () => (printed.includes("Creating the engine's Python environment") ? true : undefined), 'servicectl to show the installing stage')
      expect((await setup.api('GET', '/v1/models/hanging/progress')).body.stage).to.equal('installing')
      await until(async () => ((await setup.environments()).some((name) => name.startsWith('.creating-')) ? true : undefined), 'the making to begin')
      expect((await setup.api('POST', '/v1/models/hanging/cancel')).status).to.equal(200)
      expect((await cli).exitCode).not.to.equal(0)
      expect(printed).to.contain('cancelled')
      expect(await setup.environments()).to.deep.equal(before)
      expect(setup.service.output()).to.match(/stopped creating Python environment py[\d.]+-[\da-f]+: every launch waiting for it was cancelled/)
    })

    it('servicectl virtualenvs lists each environment with the models using it; remove-virtualenv refuses while one does, then deletes', async () => {
      const cli = (args: string[], input?: string) => servicectl([...args, '-e', setup.service.url], {input})
      const listed = await cli(['virtualenvs', '--json'])
      expect(listed.exitCode, listed.stderr).to.equal(0)
      const environments = JSON.parse(listed.stdout) as Array<{name: string; models: string[]; packages: string[]; installer: string; size_bytes: number; worker: string; path: string}>
      const six = environments.find((environment) => environment.packages.join() === 'six')!
      expect(six).to.deep.include({installer: 'uv', models: ['six-a', 'six-b'], path: join(setup.home, 'virtualenv', six.name), worker: 'local'})
      expect(six.size_bytes).to.be.above(10_000)
      expect(environments.find((environment) => environment.packages.join() === 'idna,six')?.models).to.deep.equal(['both-1', 'both-2', 'both-3'])
      const table = await cli(['virtualenvs'])
      expect(table.stdout).to.match(new RegExp(`${six.name}\\s+\\d+\\.\\d+\\.\\d+\\s+uv\\s+.*six-a, six-b\\s+local\\s+six`))

      const refused = await cli(['remove-virtualenv', '-n', six.name, '--check'])
      expect(refused.exitCode).not.to.equal(0)
      expect(refused.stderr).to.contain(`Python environment ${six.name} is in use by models six-a, six-b on worker local; terminate them first.`)
      for (const uid of ['six-a', 'six-b']) expect((await setup.api('DELETE', `/v1/models/${uid}`)).status).to.equal(200)
      const declined = await cli(['remove-virtualenv', '-n', six.name], 'n\n')
      expect(declined.exitCode).to.equal(1)
      expect(declined.stderr).to.contain('Declined: nothing was deleted.')
      const removed = await cli(['remove-virtualenv', '-n', six.name, '--check'])
      expect(removed.exitCode, removed.stderr).to.equal(0)
      expect(removed.stdout).to.contain(`Deleted ${six.name}`)
      expect(await setup.environments()).not.to.include(six.name)
      const unknown = await cli(['remove-virtualenv', '-n', six.name, '--check'])
      expect(unknown.stderr).to.contain(`there is no Python environment named ${six.name}`)

      // The next launch that needs the packages makes the environment again.
      expect((await setup.launch('py-six', 'six-c')).status).to.equal(200)
      expect(await kinds(setup, 'six-c')).to.include('installing')
      expect(await setup.environments()).to.include(six.name)

      // The routes' answers as /openapi.json declares them, a deletion's success included.
      const checker = new OpenApiChecker((await setup.api('GET', '/openapi.json')).body as OpenApiDocument)
      expect((await checker.call(setup.service, 'GET', '/v1/virtualenvs')).status).to.equal(200)
      expect((await checker.call(setup.service, 'DELETE', '/v1/virtualenvs/{name}', {params: {name: six.name}})).status).to.equal(409)
      expect((await setup.api('DELETE', '/v1/models/six-c')).status).to.equal(200)
      expect((await checker.call(setup.service, 'DELETE', '/v1/virtualenvs/{name}', {params: {name: six.name}})).status).to.equal(200)
    })

    it('a registration whose virtualenv is not usable is refused with a 400 naming the field', async () => {
      const option = await setup.register('py-bad', {packages: ['--index-url=http://elsewhere']})
      expect(option.status).to.equal(400)
      expect(option.body.error).to.include({param: 'virtualenv.packages'})
      const unknown = await setup.register('py-bad', {packagez: ['six']})
      expect(unknown.status).to.equal(400)
      expect(unknown.body.error.param).to.equal('virtualenv.packagez')
      expect(unknown.body.error.message).to.contain('is not a virtualenv setting')
      const flag = await setup.register('py-bad', {inherit_pip_config: 'no'})
      expect(flag.body.error).to.include({param: 'virtualenv.inherit_pip_config'})
    })
  })

  describe("made with Python's venv and pip (SERVICE_VIRTUALENV_INSTALLER=pip)", () => {
    let setup: Setup

    before(async () => {
      setup = await serviceWithFixture({SERVICE_VIRTUALENV_INSTALLER: 'pip'})
      expect((await setup.register('py-six')).status).to.equal(200)
      expect((await setup.register('py-missing', {packages: ['service-test-no-such-package-qq']})).status).to.equal(200)
    })

    after(async () => {
      await setup?.service.stop()
      await rm(setup?.home, {force: true, recursive: true})
    })

    it('makes the environment with pip, inheriting the machine pip configuration, and the program runs from it', async () => {
      const launched = await setup.launch('py-six', 'pip-six')
      expect(launched.status, JSON.stringify(launched.body)).to.equal(200)
      const [environment] = await setup.environments()
      const envDir = join(setup.home, 'virtualenv', environment)
      expect(JSON.parse(await readFile(join(envDir, 'service-environment.json'), 'utf8'))).to.include({installer: 'pip'})
      expect(await setup.modelLog('pip-six')).to.contain(`imported six from ${envDir}`)
      // Built in a temporary folder: its scripts name the folder it was renamed to.
      expect(await readFile(join(envDir, 'bin', 'pip'), 'utf8')).to.match(new RegExp(`^#!${envDir}/bin/python`))
    })

    it("a package no index has fails the launch with pip's reason", async () => {
      const failed = await setup.launch('py-missing', 'pip-missing')
      expect(failed.status).to.equal(500)
      expect(failed.body.error.message).to.contain('pip install exited with code 1')
      expect(failed.body.error.message).to.contain('No matching distribution found for service-test-no-such-package-qq')
    })
  })

  it('on a machine without Python, a launch says what to install', async () => {
    const setup = await serviceWithFixture({SERVICE_PYTHON: '/nonexistent/python3'})
    try {
      expect((await setup.register('py-six')).status).to.equal(200)
      const failed = await setup.launch('py-six', 'no-python')
      expect(failed.status).to.equal(400)
      expect(failed.body.error).to.include({code: 'unsupported', param: 'model_engine'})
      expect(failed.body.error.message).to.contain('no Python interpreter was found')
      expect(failed.body.error.message).to.contain('apt install python3 python3-venv python3-pip')
      expect(await setup.environments()).to.deep.equal([])
    } finally {
      await setup.service.stop()
      await rm(setup.home, {force: true, recursive: true})
    }
  })
})
