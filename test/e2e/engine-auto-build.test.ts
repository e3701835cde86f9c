/**
 * The PLUMBING of the service's background build, with a STAND-IN build program: real `service-local` processes
 * with the fixture plugin engine-stand-in-build linked, whose build (build.js) compiles nothing; it prints a
 * cmake-like progress line and exits when the test writes an exit code into its folder. What is checked is what the
 * service does around a build: the opt-outs, the low priority, the progress route and log, the machine-wide lock
 * (a second service reports the first's build), the outcome, and no retry of a failure until the next start. Then
 * a real llama.cpp launch while node-llama-cpp's build lock is held (by the test; nothing compiles). No real build
 * of llama.cpp runs here (docs/engine-llama-cpp.md says how long one took on this machine).
 */
import {expect} from 'chai'
import {mkdir, mkdtemp, readFile, rm, stat, utimes, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import {callApi, ROOT, type RunningService, servicectl, startProgram, startService, temporaryDirectory} from '../helpers/service.js'

const FIXTURE = join(ROOT, 'test/fixtures/plugins/engine-stand-in-build')
const ROUTE = '/v1/engines/stand-in-build/build'

describe('background engine build (plumbing, with a stand-in build program)', function () {
  this.timeout(120_000)
  let work: string
  const services: RunningService[] = []

  /** A home with the fixture linked, and a service on it whose stand-in build uses `folder`. */
  async function serviceFor(folder: string, env: Record<string, string>, args: string[] = []): Promise<RunningService> {
    const home = await mkdtemp(join(work, 'home-'))
    const linked = await servicectl(['plugins', 'link', FIXTURE, '--no-install'], {env: {SERVICE_HOME: home}})
    expect(linked.exitCode, linked.stderr).to.equal(0)
    const service = await startService({args, env: {STAND_IN_BUILD_FOLDER: folder, ...env}, home})
    services.push(service)
    return service
  }

  const status = async (service: RunningService, path = ROUTE) => {
    const {body, status: code} = await callApi(service, 'GET', path)
    expect(code, JSON.stringify(body)).to.equal(200)
    return body
  }

  /** Asks until the build reaches `state` (the stand-in runs on its own time); the test's timeout bounds it. */
  async function until(service: RunningService, check: (body: any) => boolean): Promise<any> {
    for (;;) {
      const body = await status(service)
      if (check(body)) return body
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  }

  const ran = async (folder: string) => (await readFile(join(folder, 'ran'), 'utf8').catch(() => '')).split('\n').filter(Boolean)

  before(async () => {
    work = await temporaryDirectory('service-auto-build-')
  })

  afterEach(async () => {
    for (const service of services.splice(0)) await service.stop()
  })

  after(async () => {
    await rm(work, {force: true, recursive: true})
  })

  it('is off in the tests by default and with --no-auto-build, for every engine: nothing probed or built', async () => {
    const folder = join(work, 'off')
    const byDefault = await serviceFor(folder, {})
    expect(await status(byDefault)).to.deep.include({engine: 'stand-in-build', state: 'off'})
    expect((await status(byDefault, '/v1/engines/llama.cpp/build')).state).to.equal('off')
    const byFlag = await serviceFor(folder, {SERVICE_AUTO_BUILD: '1'}, ['--no-auto-build'])
    const off = await status(byFlag)
    expect(off.state).to.equal('off')
    expect(off.reason).to.contain('`servicectl engine build stand-in-build` builds by hand')
    expect(await ran(folder)).to.deep.equal([])
    const none = await callApi(byFlag, 'GET', '/v1/engines/vllm/build')
    expect(none.status).to.equal(404)
    expect(none.body.error.message).to.contain('engine vllm has no background build here; engines that have one: ')
  })

  it('builds at low priority in the background, shows progress on the route and in the log, and one service (nor `engine build` meanwhile) builds for the machine', async () => {
    const folder = join(work, 'succeeds')
    await rm(folder, {force: true, recursive: true})
    // Only the stand-in, in every service here: the list form of SERVICE_AUTO_BUILD leaves llama.cpp off.
    const first = await serviceFor(folder, {SERVICE_AUTO_BUILD: 'stand-in-build'})
    expect((await status(first, '/v1/engines/llama.cpp/build')).state).to.equal('off')
    const building = await until(first, (body) => body.percent === 50)
    expect(building).to.deep.include({engine: 'stand-in-build', stage: 'compiling', state: 'building'})
    expect(building.pid).to.be.a('number')
    expect(building.log_tail).to.deep.equal(['Cloning the stand-in source (priority 19)', '[ 50%] Building CXX object stand-in.o'])
    // The service answers while it builds.
    expect((await callApi(first, 'GET', '/v1/models')).status).to.equal(200)

    const second = await serviceFor(folder, {SERVICE_AUTO_BUILD: 'stand-in-build'})
    const seen = await until(second, (body) => body.pid === building.pid)
    expect(seen).to.deep.include({percent: 50, state: 'building'})
    expect(second.output()).to.contain('stand-in-build: another service on this machine is building it in the background; GET /v1/engines/stand-in-build/build shows its progress.')

    const byHand = await servicectl(['engine', 'build', 'stand-in-build'], {env: {SERVICE_HOME: first.home, STAND_IN_BUILD_FOLDER: folder}})
    expect(byHand.exitCode).to.equal(1)
    expect(byHand.stderr).to.contain('Error: a service on this machine is building stand-in-build in the background; GET /v1/engines/stand-in-build/build shows its progress.')

    await writeFile(join(folder, 'finish'), '0')
    const done = await until(first, (body) => body.state === 'succeeded')
    expect(done).to.deep.include({binaries: 'Models launched now use the stand-in build.', percent: 100})
    expect((await until(second, (body) => body.state === 'succeeded')).binaries).to.equal('Models launched now use the stand-in build.')
    expect(await ran(folder), 'probed and built once, by the first service').to.deep.equal(['probe', 'build'])
    expect(first.output()).to.match(/stand-in-build: building it for this machine in the background at low priority \(pid \d+\), as the stand-in engine has no build yet\. .*It stops with the service and starts again with the next; --no-auto-build or SERVICE_AUTO_BUILD=0 turns it off\./)
    expect(first.output()).to.contain('stand-in-build: background build 50% (compiling)')
    expect(first.output()).to.contain('stand-in-build: built for this machine in the background in ')
    expect(await readFile(done.log_file, 'utf8')).to.contain('[100%] Linking CXX shared library stand-in.node\n')
    expect((await stat(done.log_file)).mode & 0o777, 'the build log is readable by the service\'s user only').to.equal(0o600)
  })

  it('reports a failed build with its last lines and does not retry it until the next start', async () => {
    const folder = join(work, 'fails')
    await rm(folder, {force: true, recursive: true})
    const service = await serviceFor(folder, {SERVICE_AUTO_BUILD: 'stand-in-build'})
    await until(service, (body) => body.state === 'building')
    await writeFile(join(folder, 'finish'), '3')
    const failed = await until(service, (body) => body.state === 'failed')
    expect(failed.error).to.equal('exit code 3')
    expect(failed.log_tail.at(-1)).to.equal('stand-in.cpp:1: error: told to fail')
    expect(service.output()).to.contain('not retried until the next start or `servicectl engine build stand-in-build`')
    expect(await ran(folder)).to.deep.equal(['probe', 'build'])
    await service.stop()
    services.splice(0)

    const next = await serviceFor(folder, {SERVICE_AUTO_BUILD: 'stand-in-build'})
    expect((await until(next, (body) => body.state === 'failed')).error).to.equal('exit code 3')
    expect(await ran(folder), 'the next start tried again').to.deep.equal(['probe', 'build', 'probe', 'build'])
  })
})

describe('background engine build in a cluster', function () {
  this.timeout(60_000)

  it('is a worker\'s, which runs the models (the supervisor runs none, so it has none), and --no-auto-build turns it off there', async () => {
    const supervisor = await startProgram('service-supervisor', ['-H', '127.0.0.1', '-p', '0'])
    try {
      const worker = await startProgram('service-worker', ['-e', supervisor.url, '-H', '127.0.0.1', '--no-auto-build'], {env: {SERVICE_AUTO_BUILD: '1'}})
      try {
        const onWorker = await callApi(worker, 'GET', '/v1/engines/llama.cpp/build')
        expect(onWorker.status).to.equal(200)
        expect(onWorker.body).to.deep.include({engine: 'llama.cpp', state: 'off'})
        // No build route there: the path reads as Xinference's GET /v1/engines/{model_type}/{model_name}, of no such type.
        const onSupervisor = await callApi(supervisor, 'GET', '/v1/engines/llama.cpp/build')
        expect(onSupervisor.status).to.equal(400)
        expect(onSupervisor.body.error.message).to.match(/^model type "llama\.cpp" is not known/)
      } finally {
        await worker.stop()
      }
    } finally {
      await supervisor.stop()
    }
  })
})

describe('a llama.cpp launch while llama.cpp is being built (node-llama-cpp\'s build lock held by the test)', function () {
  this.timeout(120_000)
  const localBuilds = join(ROOT, 'node_modules/node-llama-cpp/llama/localBuilds')
  // The name node-llama-cpp gives the lock of a CPU build in progress; no build runs, the test only holds its lock.
  const lock = join(localBuilds, 'service-test-build.lock')
  let service: RunningService
  let refresh: NodeJS.Timeout

  before(async () => {
    await mkdir(lock, {recursive: true})
    // Kept fresh as proper-lockfile's holder keeps it, so that it never counts as left behind.
    refresh = setInterval(() => void utimes(lock, new Date(), new Date()).catch(() => {}), 2000)
    service = await startService()
  })

  after(async () => {
    clearInterval(refresh)
    await rm(lock, {force: true, recursive: true})
    await service?.stop()
  })

  it('loads the prebuilt binaries at once, and its log says why', async () => {
    const launched = await servicectl(['launch', '-n', 'tiny-random-llm', '--model-engine', 'llama.cpp', '-e', service.url])
    expect(launched.exitCode, launched.stderr).to.equal(0)
    const log = await readFile(join(service.home, 'logs/models/tiny-random-llm.log'), 'utf8')
    expect(log).to.contain('llama.cpp is being built for this machine in the background: this model loads the prebuilt binaries; launch it again once the build has ended to use the local build.')
    expect(log).to.contain("loaded node-llama-cpp's prebuilt llama.cpp binaries (")
  })
})
