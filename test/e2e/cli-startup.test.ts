/**
 * What `servicectl list` loads to answer: a real servicectl process against a real service-local, with a probe
 * preloaded (`node --import`) that records every module loaded and Node's own internal modules when it exits.
 * Node's fetch loads its bundled undici (5 MB of JavaScript and llhttp's WebAssembly) and oclif's Node version
 * check loads semver: the two largest costs of a short command, which servicectl no longer pays.
 */
import {expect} from 'chai'
import {execa} from 'execa'
import {readFile, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import {alive, childPids} from '../helpers/processes.js'
import {ROOT, type RunningService, SERVICECTL, startService, temporaryDirectory, until} from '../helpers/service.js'

const PROBE = `
import module from 'node:module'
import {writeFileSync} from 'node:fs'
const loaded = []
module.registerHooks({load(url, context, next) { loaded.push(url); return next(url, context) }})
process.on('exit', () => writeFileSync(process.env.PROBE_OUT, JSON.stringify({internal: process.moduleLoadList, loaded})))
`

describe('servicectl list start-up (real servicectl and service-local)', () => {
  let service: RunningService
  let loads: {internal: string[]; loaded: string[]}
  let stdout: string

  before(async () => {
    service = await startService()
    const folder = await temporaryDirectory('cli-startup-')
    await writeFile(join(folder, 'probe.mjs'), PROBE)
    const output = join(folder, 'loads.json')
    const result = await execa('node', ['--import', join(folder, 'probe.mjs'), SERVICECTL, 'list'], {env: {NO_COLOR: '1', PROBE_OUT: output, SERVICE_ENDPOINT: service.url}})
    stdout = result.stdout
    loads = JSON.parse(await readFile(output, 'utf8'))
  })

  after(async () => {
    await service?.stop()
  })

  it('answers the list over node:http without loading Node’s undici', () => {
    expect(stdout).to.include('No models are running')
    expect(loads.internal).to.include('NativeModule http')
    expect(loads.internal.filter((name) => name.includes('undici'))).to.deep.equal([])
  })

  it('leaves undici unloaded in the idle service too (an ES import of node:http would load it)', async () => {
    const folder = await temporaryDirectory('service-startup-')
    await writeFile(join(folder, 'probe.mjs'), PROBE)
    const output = join(folder, 'loads.json')
    const idle = await startService({env: {NODE_OPTIONS: `--import ${join(folder, 'probe.mjs')}`, PROBE_OUT: output}})
    await idle.stop()
    const serviceLoads = JSON.parse(await readFile(output, 'utf8')) as {internal: string[]}
    expect(serviceLoads.internal).to.include('NativeModule http')
    expect(serviceLoads.internal.filter((name) => name.includes('undici'))).to.deep.equal([])
  })

  it('names the web interface in its start line, beside the API and its reference', () => {
    expect(service.output()).to.include(`Service running at ${service.url} (web interface ${service.url}/ui, API ${service.url}/v1, reference ${service.url}/docs).`)
  })

  it('leaves semver unloaded, the Node version being checked by the launcher', () => {
    expect(loads.loaded.some((url) => url.includes('/@oclif/core/'))).to.equal(true)
    expect(loads.loaded.filter((url) => url.includes('/node_modules/semver/'))).to.deep.equal([])
  })
})

describe('service-local with a model hub it does not know', () => {
  it('refuses to start with one line naming the setting, rather than quietly using Hugging Face', async () => {
    const home = await temporaryDirectory('bogus-hub-')
    const started = await execa('node', [join(ROOT, 'bin/service-local.js'), '--port', '0'], {env: {SERVICE_HOME: home, SERVICE_MODEL_SRC: 'bogus'}, reject: false, timeout: 20_000})
    expect(started.exitCode).to.equal(1)
    expect(started.stdout).to.equal('')
    expect(started.stderr).to.equal('service-local: SERVICE_MODEL_SRC is "bogus", which is not a model hub; use one of: huggingface, modelscope.')
  })
})


describe('set-up: . scripts/ensure-node.sh, then npm link', () => {
  it('puts servicectl where PATH looks, so the README examples run by name', async () => {
    const prefix = await temporaryDirectory('npm-prefix-')
    const linked = await execa('bash', ['-c', '. scripts/ensure-node.sh && npm link --no-audit --no-fund --loglevel=error >/dev/null && command -v servicectl && servicectl --version'], {
      cwd: ROOT,
      env: {npm_config_prefix: prefix},
      reject: false,
    })
    expect(linked.exitCode, linked.stderr).to.equal(0)
    expect(linked.stdout.split('\n')[0]).to.equal(join(prefix, 'bin', 'servicectl'))
    expect(linked.stdout).to.match(/service-toolkit\/\d/)
  })
})

describe('set-up: npm start, as the README starts the service', () => {
  it('serves a built checkout without building it again, the web interface too, and Ctrl-C stops all of it', async function () {
    this.timeout(120_000)
    const home = await temporaryDirectory('npm-start-')
    // As written but for the port: the README's 9997 may be taken where the suite runs. Detached, so that the
    // process group is the terminal's, to which Ctrl-C sends SIGINT.
    const started = execa('bash', ['-c', '. scripts/ensure-node.sh && exec npm start -- --port 0'], {all: true, buffer: false, cwd: ROOT, detached: true, env: {SERVICE_AUTO_BUILD: '0', SERVICE_HOME: home}, reject: false})
    let output = ''
    started.all!.on('data', (chunk: Buffer) => (output += chunk.toString()))
    try {
      const url = await until(async () => /Service running at (http:\/\/[^\s,]+)/.exec(output)?.[1], `npm start to serve (it printed: ${output})`, 90_000)
      expect(output).to.contain('The build is current')
      expect((await fetch(`${url}/health`)).status).to.equal(200)
      expect((await fetch(`${url}/ui/`)).status).to.equal(200)
      const pids = [started.pid!, ...(await childPids(started.pid!))]
      process.kill(-started.pid!, 'SIGINT')
      await started
      await until(async () => (pids.some((pid) => alive(pid)) ? undefined : true), 'every process npm start made to end')
    } finally {
      if (started.exitCode === null) process.kill(-started.pid!, 'SIGKILL')
    }
  })
})
