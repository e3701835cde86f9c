/**
 * The CPU container image, built here (scripts/container-test.sh: podman, a base image made from Debian packages) and
 * run with podman as a user would: `service-local` on its mapped port, a model launched with `servicectl` and chatted
 * with through the official `openai` client, then the container restarted, and killed with SIGKILL and started again,
 * each time serving its registrations, its model and its cache with nothing corrupt. Then `service-supervisor` with
 * `--auth-config` and a `service-worker` joining it, both from the same image.
 */
import {expect} from 'chai'
import {execa} from 'execa'
import getPort from 'get-port'
import {chmod, readdir, readFile, rm, stat, writeFile} from 'node:fs/promises'
import {join, relative} from 'node:path'
import OpenAI from 'openai'

import {apiKeyOf, writeTestAuthConfig} from '../helpers/auth.js'
import {callApi, ROOT, servicectl, temporaryDirectory, until} from '../helpers/service.js'

const CONTAINERS_CONF = join(ROOT, 'test/fixtures/container/containers.conf')
const LLM_FILE = 'cache/tiny-random-llm--0_0001B--ggufv2--f32/tiny-random-llm-f32.gguf'
const HUB_FAMILY = {
  context_length: 2048,
  model_ability: ['chat'],
  model_name: 'hub-tiny',
  model_specs: [{model_format: 'ggufv2', model_size_in_billions: '0_5', model_src: {huggingface: {model_file_name_template: 'tiny-{quantization}.gguf', model_id: 'test-org/tiny-GGUF', quantizations: ['q4_0']}}}],
  version: 2,
}

const podman = (args: string[], options: {reject?: boolean} = {}) => execa('podman', args, {env: {CONTAINERS_CONF}, ...options})

/** What the image is made from and how it is tested: a commit changing any of them runs this test in CI. */
const CONTAINER_FILES = ['deploy/container/', 'scripts/container-test.sh', 'test/e2e/container.test.ts', 'test/fixtures/container/']

/**
 * Whether the checked-out commit changes a container file against its first parent. A cold image build takes minutes,
 * too long for every CI run, so CI runs this test where the container changes; without that history it runs.
 */
async function containerFilesChanged(): Promise<boolean> {
  const diff = await execa('git', ['diff', '--name-only', 'HEAD^1', 'HEAD'], {cwd: ROOT, reject: false})
  if (diff.exitCode !== 0) return true
  return diff.stdout.split('\n').some((file) => CONTAINER_FILES.some((prefix) => file.startsWith(prefix)))
}

/** Every file under a folder, relative to it. */
async function filesUnder(folder: string): Promise<string[]> {
  const entries = await readdir(folder, {recursive: true, withFileTypes: true})
  return entries.filter((entry) => entry.isFile()).map((entry) => relative(folder, join(entry.parentPath, entry.name)))
}

describe('container image (podman): service-local in a container, restarted and killed, supervisor and worker', function () {
  this.timeout(900_000)
  const suffix = `${process.pid}-${Date.now()}`
  const names = {home: `service-test-home-${suffix}`, local: `service-test-local-${suffix}`, supervisor: `service-test-supervisor-${suffix}`, worker: `service-test-worker-${suffix}`}
  let image = process.env.SERVICE_CONTAINER_IMAGE ?? ''
  let builtHere = false
  let home: string
  let url: string
  let scratch: string

  const healthy = (endpoint: string) =>
    until(async () => ((await fetch(`${endpoint}/health`).catch(() => undefined))?.ok ? true : undefined), `the service in the container at ${endpoint}`, 60_000)
  const chat = async () => {
    const openai = new OpenAI({apiKey: 'not-needed', baseURL: `${url}/v1`, maxRetries: 0})
    const reply = await openai.chat.completions.create({max_tokens: 6, messages: [{content: 'Hello!', role: 'user'}], model: 'tiny-random-llm'})
    expect(reply.usage?.completion_tokens).to.equal(6)
    return reply.choices[0].message.content
  }

  const modelReady = () =>
    until(async () => {
      const {body, status} = await callApi({url}, 'GET', '/v1/models/tiny-random-llm').catch(() => ({body: undefined, status: 0}))
      return status === 200 && body.status === 'ready' ? true : undefined
    }, 'tiny-random-llm to be running again', 60_000)

  /**
   * Stops the container as `stop` does and checks what it must keep once it serves again: the registration, the
   * model (relaunched from the desired state) answering, the weights made once, and state files that parse.
   */
  const expectIntactAfter = async (stop: () => Promise<unknown>) => {
    const weights = await stat(join(home, LLM_FILE))
    await stop()
    await healthy(url)
    await modelReady()
    expect(await chat()).to.be.a('string')
    expect((await callApi({url}, 'GET', '/v1/model_registrations/LLM/hub-tiny')).status).to.equal(200)
    const now = await stat(join(home, LLM_FILE))
    expect({mtimeMs: now.mtimeMs, size: now.size}).to.deep.equal({mtimeMs: weights.mtimeMs, size: weights.size})
    const files = await filesUnder(home)
    expect(files.filter((file) => /\.(partial|tmp)$|\.download/.test(file))).to.deep.equal([])
    for (const file of files.filter((name) => name.endsWith('.json'))) JSON.parse(await readFile(join(home, file), 'utf8'))
    const generated = (await readFile(join(home, 'logs/service-local.log'), 'utf8')).split('\n').filter((line) => line.includes('generated tiny-random-llm ('))
    expect(generated).to.have.length(1)
  }

  before(async function () {
    if (process.env.SERVICE_CONTAINER_TEST === '0') {
      console.log('    skipped: SERVICE_CONTAINER_TEST=0 (this machine cannot run podman as root)')
      this.skip()
    }

    if (process.env.SERVICE_CONTAINER_TEST !== '1' && !(await containerFilesChanged())) {
      console.log(`    skipped: the last commit changes none of ${CONTAINER_FILES.join(', ')}; SERVICE_CONTAINER_TEST=1 runs it (always before a release)`)
      this.skip()
    }
    if (!image) {
      const build = await execa('bash', [join(ROOT, 'scripts/container-test.sh'), '--build'], {env: {IMAGE: `service-toolkit-test-${suffix}`}, stderr: 'inherit'})
      image = build.stdout.trim().split('\n').at(-1)!
      builtHere = true
    }

    scratch = await temporaryDirectory('service-container-')
    await podman(['volume', 'create', names.home])
    home = (await podman(['volume', 'inspect', '--format', '{{.Mountpoint}}', names.home])).stdout.trim()
    url = `http://127.0.0.1:${await getPort()}`
  })

  after(async () => {
    if (!home) return
    // The worker first: it uses the supervisor's network.
    for (const name of [names.worker, names.supervisor, names.local]) await podman(['rm', '--force', '--volumes', '--time', '0', name], {reject: false})
    await podman(['volume', 'rm', '--force', names.home], {reject: false})
    if (builtHere) {
      await podman(['rmi', image], {reject: false})
      // Build stages left untagged by earlier builds; the newest of each stays, as the next build's cache.
      for (const stage of ['install', 'llama-cpp']) {
        const {stdout} = await podman(['images', '--filter', 'dangling=true', '--filter', `label=service-toolkit.stage=${stage}`, '--format', 'json'])
        const images = (JSON.parse(stdout) as Array<{Id: string; Created: number}>).sort((a, b) => b.Created - a.Created)
        for (const old of images.slice(1)) await podman(['rmi', old.Id], {reject: false})
      }
    }
    await rm(scratch, {force: true, recursive: true})
  })

  it('runs service-local on all interfaces as a non-root user with SERVICE_HOME on its volume, healthy, with --log-level and SERVICE_MODEL_SRC passed through', async () => {
    const port = new URL(url).port
    await podman(['run', '--detach', '--name', names.local, '--publish', `127.0.0.1:${port}:9997`, '--volume', `${names.home}:/var/lib/service`, '--env', 'SERVICE_MODEL_SRC=modelscope', image, '--log-level', 'debug'])
    await healthy(url)
    expect((await podman(['exec', names.local, 'id', '-u'])).stdout.trim()).to.equal('1000')
    expect((await podman(['healthcheck', 'run', names.local], {reject: false})).exitCode).to.equal(0)
    const {stdout: healthcheck} = await podman(['image', 'inspect', '--format', '{{json .HealthCheck}}', image])
    expect(JSON.parse(healthcheck).Test).to.deep.equal(['CMD', 'service-healthcheck'])
    const logs = await readFile(join(home, 'logs/service-local.log'), 'utf8')
    expect(logs).to.match(/ debug /)
    expect(logs).to.contain('listening on http://')
    expect((await podman(['exec', names.local, 'printenv', 'SERVICE_MODEL_SRC'])).stdout.trim()).to.equal('modelscope')
  })

  it('is as large as docs/deployment.md says, within a tenth', async () => {
    const stated = /The CPU image is about ([\d,]+) MB/.exec(await readFile(join(ROOT, 'docs/deployment.md'), 'utf8'))
    expect(stated, 'docs/deployment.md: "The CPU image is about N MB"').to.not.equal(null)
    const {stdout} = await podman(['image', 'inspect', '--format', '{{.Size}}', image])
    const megabytes = Number(stdout.trim()) / 1e6
    expect(megabytes, `podman image inspect: ${megabytes.toFixed(0)} MB`).to.be.within(Number(stated![1].replaceAll(',', '')) * 0.9, Number(stated![1].replaceAll(',', '')) * 1.1)
  })

  it('launches tiny-random-llm with servicectl through the mapped port on the portable build of llama.cpp, chats with the openai client, and keeps a registration', async () => {
    const launched = await servicectl(['launch', '-n', 'tiny-random-llm', '--model-engine', 'llama.cpp', '-e', url])
    expect(launched.exitCode, launched.stderr).to.equal(0)
    expect(await chat()).to.be.a('string').and.not.equal('')
    const modelLogs = await Promise.all((await filesUnder(join(home, 'logs/models'))).map((file) => readFile(join(home, 'logs/models', file), 'utf8')))
    expect(modelLogs.join('')).to.match(/loaded the local build of llama\.cpp \(CPU; CPU variant: \w+\)/)
    const family = join(scratch, 'hub-tiny.json')
    await writeFile(family, JSON.stringify(HUB_FAMILY))
    const registered = await servicectl(['register', '-t', 'LLM', '-f', family, '-e', url])
    expect(registered.exitCode, registered.stderr).to.equal(0)
  })

  it('restarted (SIGTERM), serves its registration and relaunches the model from its cache', async () => {
    await expectIntactAfter(() => podman(['restart', names.local]))
  })

  it('killed with SIGKILL and started again, serves the same with nothing corrupt', async () => {
    await expectIntactAfter(async () => {
      await podman(['kill', '--signal', 'KILL', names.local])
      await podman(['wait', names.local])
      await podman(['start', names.local])
    })
  })

  it('runs service-supervisor with --auth-config and a service-worker joining it with the cluster token, from the same image; a killed worker is lost, then rejoins', async () => {
    const authFile = await writeTestAuthConfig(scratch)
    await chmod(authFile, 0o644)
    const supervisor = `http://127.0.0.1:${await getPort()}`
    const token = ['--env', 'SERVICE_CLUSTER_TOKEN=container-test-token']
    await podman(['run', '--detach', '--name', names.supervisor, '--publish', `127.0.0.1:${new URL(supervisor).port}:9997`, '--volume', `${authFile}:/etc/service/auth.json:ro`, ...token, image, 'service-supervisor', '--auth-config', '/etc/service/auth.json'])
    await healthy(supervisor)
    // The worker shares the supervisor's network, so each reaches the other at 127.0.0.1.
    await podman(['run', '--detach', '--name', names.worker, '--network', `container:${names.supervisor}`, ...token, image, 'service-worker', '-e', 'http://127.0.0.1:9997', '-H', '127.0.0.1', '-p', '9998'])

    expect((await callApi({url: supervisor}, 'GET', '/v1/models')).status).to.equal(401)
    const admin = {authorization: `Bearer ${apiKeyOf('root')}`}
    const workerIn = (state: string) =>
      until(async () => {
        const {body, status} = await callApi({url: supervisor}, 'GET', '/v1/cluster/workers', undefined, admin)
        return status === 200 && body.list.length === 1 && body.list[0].state === state ? body.list : undefined
      }, `the worker to be ${state}`, 60_000)
    expect((await workerIn('ready'))[0].id).to.equal('127.0.0.1:9998')
    const probe = await podman(['exec', names.worker, 'service-healthcheck', 'http://127.0.0.1:9998/v1/worker/health'], {reject: false})
    expect(probe.exitCode).to.equal(0)

    // A worker killed is counted lost (after SERVICE_WORKER_LOST_TIMEOUT), and rejoins as the same worker when it returns.
    await podman(['kill', '--signal', 'KILL', names.worker])
    await workerIn('lost')
    await podman(['start', names.worker])
    expect((await workerIn('ready'))[0].id).to.equal('127.0.0.1:9998')
  })
})
