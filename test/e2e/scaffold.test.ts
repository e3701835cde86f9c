/**
 * `servicectl scaffold` end to end: the real CLI writes an engine plugin and a model type plugin into
 * temporary directories; they type-check against the toolkit's contract, link into a temporary SERVICE_HOME
 * with no build step, and a real `service-local` loads both and runs their demo models.
 */
import {expect} from 'chai'
import {execa} from 'execa'
import {mkdir, readdir, readFile, rm, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import {ROOT, callApi, type RunningService, servicectl, startService, temporaryDirectory} from '../helpers/service.js'

const ENGINE = 'Mock.Engine'
const ENGINE_SLUG = 'mock-engine'
const MODEL_TYPE = 'Classifier'
const MODEL_TYPE_SLUG = 'classifier'

/** oclif wraps error messages to the terminal width (even inside a path) behind `›`; compare without that. */
const squash = (text: string) => text.replaceAll(/[\s›]+/g, '')

const api = callApi

describe('servicectl scaffold', function () {
  let work: string
  let engineDir: string
  let typeDir: string
  let engineRun: Awaited<ReturnType<typeof servicectl>>
  let typeRun: Awaited<ReturnType<typeof servicectl>>

  before(async () => {
    work = await temporaryDirectory('service-scaffold-')
    engineDir = join(work, 'engine')
    typeDir = join(work, 'model type')
    ;[engineRun, typeRun] = await Promise.all([
      servicectl(['scaffold', 'engine', ENGINE, '--dir', engineDir]),
      servicectl(['scaffold', 'model-type', MODEL_TYPE, '--dir', typeDir, '--json']),
    ])
  })

  after(async () => {
    await rm(work, {force: true, recursive: true})
  })

  it('writes an engine plugin and prints where, and the next step', async () => {
    expect(engineRun.exitCode, engineRun.stderr).to.equal(0)
    expect(engineRun.stdout).to.include(`Created engine plugin service-toolkit-plugin-engine-${ENGINE_SLUG} in ${engineDir}`)
    expect(engineRun.stdout).to.include(`Next: servicectl plugins link ${engineDir}\n`)
    expect(await readdir(engineDir)).to.have.members(['README.md', 'demo-model.txt', 'host.js', 'jsconfig.json', 'package.json', 'register.js'])
    const pjson = JSON.parse(await readFile(join(engineDir, 'package.json'), 'utf8'))
    expect(pjson).to.deep.include({name: `service-toolkit-plugin-engine-${ENGINE_SLUG}`, type: 'module'})
    expect(pjson.oclif).to.deep.equal({hooks: {'service:register': './register.js'}})
  })

  it('writes a model type plugin and describes it with --json', async () => {
    expect(typeRun.exitCode, typeRun.stderr).to.equal(0)
    const result = JSON.parse(typeRun.stdout)
    expect(result).to.deep.include({directory: typeDir, kind: 'model-type', name: MODEL_TYPE, package_name: `service-toolkit-plugin-model-${MODEL_TYPE_SLUG}`})
    // The path has a space, so the printed command quotes it.
    expect(result.next[0]).to.equal(`servicectl plugins link '${typeDir}'`)
    expect(result.files).to.have.members(['README.md', 'demo-model.txt', 'jsconfig.json', 'package.json', 'reference-host.js', 'register.js'])
  })

  it('fills in every placeholder', async () => {
    for (const dir of [engineDir, typeDir]) {
      for (const file of await readdir(dir)) expect(await readFile(join(dir, file), 'utf8'), file).to.not.match(/__[A-Z][A-Z_]*__/)
    }

    expect(await readFile(join(engineDir, 'register.js'), 'utf8')).to.include(`name: '${ENGINE}'`)
    expect(await readFile(join(typeDir, 'register.js'), 'utf8')).to.include(`path: '/v1/${MODEL_TYPE_SLUG}/infer'`)
  })

  it('writes plugins that type-check against the toolkit contract', async function () {
    this.timeout(30_000)
    const tsc = join(ROOT, 'node_modules/typescript/bin/tsc')
    const check = (dir: string) =>
      execa('node', [tsc, '-p', join(dir, 'jsconfig.json'), '--typeRoots', join(ROOT, 'node_modules/@types')], {all: true, reject: false})
    for (const result of await Promise.all([check(engineDir), check(typeDir)])) expect(result.exitCode, result.all).to.equal(0)
  })

  it('refuses to write into a non-empty directory, and changes nothing there', async () => {
    const occupied = join(work, 'occupied')
    await mkdir(occupied)
    await writeFile(join(occupied, 'notes.txt'), 'mine')
    const result = await servicectl(['scaffold', 'engine', 'other', '--dir', occupied])
    expect(result.exitCode).to.equal(1)
    expect(squash(result.stderr)).to.include(squash(`${occupied} already exists and is not empty`))
    expect(await readdir(occupied)).to.deep.equal(['notes.txt'])
  })

  it('refuses an invalid name with the rule it breaks', async () => {
    const result = await servicectl(['scaffold', 'model-type', 'my type', '--dir', join(work, 'never')])
    expect(result.exitCode).to.equal(1)
    expect(squash(result.stderr)).to.include(squash('"my type" is not a valid model type name'))
    expect(await readdir(work)).to.not.include('never')
  })

  describe('linked into a service', () => {
    let home: string
    let service: RunningService

    before(async () => {
      home = await temporaryDirectory('service-scaffold-home-')
      // One after the other: both write the plugin list in SERVICE_HOME/plugins/package.json.
      for (const dir of [engineDir, typeDir]) {
        const linked = await servicectl(['plugins', 'link', dir, '--no-install'], {env: {SERVICE_HOME: home}})
        expect(linked.exitCode, linked.stderr).to.equal(0)
      }

      service = await startService({home})
    })

    after(async () => {
      await service?.stop()
      await rm(home, {force: true, recursive: true})
    })

    it('loads both plugins with no problems', async () => {
      const {body} = await api(service, 'GET', '/v1/cluster/plugins')
      expect(body.problems).to.deep.equal([])
      expect(body.engines).to.deep.include({
        formats: [ENGINE_SLUG],
        model_types: ['LLM'],
        name: ENGINE,
        parameters: {delay_ms: {description: 'Pause before each word, in milliseconds (default 0).', maximum: 10_000, minimum: 0, type: 'integer'}},
        plugin: `service-toolkit-plugin-engine-${ENGINE_SLUG}`,
      })
      expect(body.model_types).to.deep.include({description: `Describe what ${MODEL_TYPE} models do.`, name: MODEL_TYPE, plugin: `service-toolkit-plugin-model-${MODEL_TYPE_SLUG}`})
      expect(body.engines.map((engine: {name: string}) => engine.name)).to.include(`${MODEL_TYPE_SLUG}-reference`)
    })

    it("runs the engine's demo model behind the OpenAI chat route", async () => {
      const launched = await api(service, 'POST', '/v1/models', {model_engine: ENGINE, model_name: `${ENGINE_SLUG}-demo`})
      expect(launched.status, JSON.stringify(launched.body)).to.equal(200)
      const chat = await api(service, 'POST', '/v1/chat/completions', {messages: [{content: 'scaffolded and running', role: 'user'}], model: `${ENGINE_SLUG}-demo`})
      expect(chat.status, JSON.stringify(chat.body)).to.equal(200)
      expect(chat.body.choices[0].message.content).to.equal('scaffolded and running')
    })

    it("serves the model type's route, running its demo model", async () => {
      const launched = await api(service, 'POST', '/v1/models', {model_name: `${MODEL_TYPE_SLUG}-demo`})
      expect(launched.status, JSON.stringify(launched.body)).to.equal(200)
      const {body, status} = await api(service, 'POST', `/v1/${MODEL_TYPE_SLUG}/infer`, {input: 'hello plugin world', model: `${MODEL_TYPE_SLUG}-demo`})
      expect(status, JSON.stringify(body)).to.equal(200)
      expect(body).to.deep.equal({model: `${MODEL_TYPE_SLUG}-demo`, object: `${MODEL_TYPE_SLUG}.result`, output: {characters: 18, words: 3}})
    })

    it("validates the model type route's requests", async () => {
      const missing = await api(service, 'POST', `/v1/${MODEL_TYPE_SLUG}/infer`, {model: `${MODEL_TYPE_SLUG}-demo`})
      expect(missing.status).to.equal(400)
      expect(missing.body.error.param).to.equal('input')
      const wrongType = await api(service, 'POST', `/v1/${MODEL_TYPE_SLUG}/infer`, {input: 'x', model: `${ENGINE_SLUG}-demo`})
      expect(wrongType.status).to.equal(400)
      expect(wrongType.body.error.message).to.include(`is a LLM model; this route runs ${MODEL_TYPE} models`)
      const unknown = await api(service, 'POST', `/v1/${MODEL_TYPE_SLUG}/infer`, {input: 'x', model: 'nope'})
      expect(unknown.status).to.equal(404)
    })
  })
  describe('an external-engine plugin, whose models run as a program of their own', () => {
    const SERVER_ENGINE = 'Mock.Server'
    const SERVER_SLUG = 'mock-server'
    let serverDir: string
    let home: string
    let service: RunningService

    before(async () => {
      serverDir = join(work, 'external engine')
      const run = await servicectl(['scaffold', 'external-engine', SERVER_ENGINE, '--dir', serverDir])
      expect(run.exitCode, run.stderr).to.equal(0)
      expect(run.stdout).to.include(`Created engine plugin service-toolkit-plugin-engine-${SERVER_SLUG} in ${serverDir}`)
      home = await temporaryDirectory('service-scaffold-external-')
      const linked = await servicectl(['plugins', 'link', serverDir, '--no-install'], {env: {SERVICE_HOME: home}})
      expect(linked.exitCode, linked.stderr).to.equal(0)
      service = await startService({home})
    })

    after(async () => {
      await service?.stop()
      await rm(home, {force: true, recursive: true})
    })

    it('writes register.js and the program it runs, every placeholder filled, type-checking against the contract', async function () {
      this.timeout(30_000)
      expect(await readdir(serverDir)).to.have.members(['README.md', 'demo-model.txt', 'jsconfig.json', 'package.json', 'register.js', 'server.py'])
      for (const file of await readdir(serverDir)) expect(await readFile(join(serverDir, file), 'utf8'), file).to.not.match(/__[A-Z][A-Z_]*__/)
      const tsc = join(ROOT, 'node_modules/typescript/bin/tsc')
      const check = await execa('node', [tsc, '-p', join(serverDir, 'jsconfig.json'), '--typeRoots', join(ROOT, 'node_modules/@types')], {all: true, reject: false})
      expect(check.exitCode, check.all).to.equal(0)
    })

    it("runs the demo model's program and serves chat and completions through it", async () => {
      const launched = await api(service, 'POST', '/v1/models', {model_engine: SERVER_ENGINE, model_name: `${SERVER_SLUG}-demo`})
      expect(launched.status, JSON.stringify(launched.body)).to.equal(200)
      const messages = [{content: 'scaffolded as a program', role: 'user'}]
      const chat = await api(service, 'POST', '/v1/chat/completions', {messages, model: `${SERVER_SLUG}-demo`})
      expect(chat.status, JSON.stringify(chat.body)).to.equal(200)
      expect(chat.body.choices[0].message.content).to.equal('scaffolded as a program')
      const completion = await api(service, 'POST', '/v1/completions', {max_tokens: 2, model: `${SERVER_SLUG}-demo`, prompt: 'one two three'})
      expect(completion.status, JSON.stringify(completion.body)).to.equal(200)
      expect(completion.body.choices[0]).to.deep.include({finish_reason: 'length', text: 'one two'})
    })
  })
})
