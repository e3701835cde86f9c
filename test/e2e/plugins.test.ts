/**
 * User plugins as a person installs them: `servicectl plugins link` (a real CLI process) into a temporary
 * SERVICE_HOME, then a real `service-local` that loads them; `servicectl plugins install` of a packed plugin by its path. The fixtures are plain-JavaScript oclif plugins:
 * engine-echo contributes an engine and a route; broken throws from its register hook.
 */
import {expect} from 'chai'
import {execa} from 'execa'
import {rm, writeFile} from 'node:fs/promises'
import {join} from 'node:path'
import {pathToFileURL} from 'node:url'

import {ROOT, SERVICECTL, callApi, type RunningService, servicectl, startService, temporaryDirectory} from '../helpers/service.js'

const FIXTURES = join(ROOT, 'test/fixtures/plugins')

const api = callApi

/** The `data:` payloads of a server-sent event stream, without the `[DONE]` terminator. */
async function sse(service: RunningService, path: string, body: unknown): Promise<any[]> {
  const response = await fetch(`${service.url}${path}`, {body: JSON.stringify(body), headers: {'content-type': 'application/json'}, method: 'POST'})
  expect(response.status).to.equal(200)
  const text = await response.text()
  return text
    .split('\n')
    .filter((line) => line.startsWith('data: ') && line !== 'data: [DONE]')
    .map((line) => JSON.parse(line.slice('data: '.length)))
}

describe('user plugins (servicectl plugins link + service-local)', function () {
  let home: string
  const link = (fixture: string) => servicectl(['plugins', 'link', join(FIXTURES, fixture), '--no-install'], {env: {SERVICE_HOME: home}})

  before(async () => {
    home = await temporaryDirectory('service-plugins-')
  })

  after(async () => {
    await rm(home, {force: true, recursive: true})
  })

  describe('installed from disk, and linked without a lockfile', () => {
    let elsewhere: string

    before(async () => {
      elsewhere = await temporaryDirectory('service-plugins-elsewhere-')
      await execa('npm', ['pack', '--pack-destination', elsewhere], {cwd: join(FIXTURES, 'engine-echo')})
    })

    after(async () => {
      await rm(elsewhere, {force: true, recursive: true})
    })

    it('`plugins install` and `plugins add` take a relative, absolute or file: path to a package file, not a GitHub repository', async () => {
      for (const [command, path] of [
        ['install', './engine-echo-0.0.1.tgz'],
        ['add', join(elsewhere, 'engine-echo-0.0.1.tgz')],
        ['install', 'file:engine-echo-0.0.1.tgz'],
      ]) {
        const pluginHome = await temporaryDirectory('service-plugins-install-')
        const env = {SERVICE_HOME: pluginHome}
        const installed = await execa('node', [SERVICECTL, 'plugins', command, path], {cwd: elsewhere, env, reject: false})
        expect(installed.exitCode, `${command} ${path}: ${installed.stderr}`).to.equal(0)
        expect(installed.stderr).not.to.contain('github.com')
        expect((await servicectl(['plugins'], {env})).stdout).to.match(/^engine-echo 0\.0\.1$/m)
        await rm(pluginHome, {force: true, recursive: true})
      }
    })

    it('`plugins link` of a plugin folder with no lockfile links it with no warning about one', async () => {
      const linkHome = await temporaryDirectory('service-plugins-link-')
      const linked = await servicectl(['plugins', 'link', join(FIXTURES, 'engine-echo')], {env: {SERVICE_HOME: linkHome}})
      expect(linked.exitCode, linked.stderr).to.equal(0)
      expect(linked.stderr).not.to.contain('lockfile')
      expect((await servicectl(['plugins'], {env: {SERVICE_HOME: linkHome}})).stdout).to.match(/^engine-echo 0\.0\.1 \(link\) /m)
      await rm(linkHome, {force: true, recursive: true})
    })
  })

  describe('a plugin that contributes an engine and a route', () => {
    let service: RunningService

    before(async () => {
      const linked = await link('engine-echo')
      expect(linked.exitCode, linked.stderr).to.equal(0)
      service = await startService({home})
    })

    after(async () => {
      await service?.stop()
    })

    it('is listed by `servicectl plugins` as linked', async () => {
      const listed = await servicectl(['plugins'], {env: {SERVICE_HOME: home}})
      expect(listed.exitCode, listed.stderr).to.equal(0)
      expect(listed.stdout).to.match(/^engine-echo 0\.0\.1 \(link\) .*test\/fixtures\/plugins\/engine-echo$/m)
    })

    it('serves its route', async () => {
      const {body, status} = await api(service, 'GET', '/v1/echo/ping')
      expect(status).to.equal(200)
      expect(body).to.deep.equal({plugin: 'engine-echo', pong: true})
    })

    it('shows its engine in /v1/cluster/plugins, next to the core plugins', async () => {
      const {body, status} = await api(service, 'GET', '/v1/cluster/plugins')
      expect(status).to.equal(200)
      expect(body.plugins).to.include.members(['engine-echo', '@service-toolkit/plugin-model-llm'])
      const echo = body.engines.find((engine: {name: string}) => engine.name === 'echo')
      expect(echo).to.deep.include({formats: ['echo'], model_types: ['LLM'], plugin: 'engine-echo'})
      expect(echo.parameters).to.have.property('delay_ms')
      expect(body.problems).to.deep.equal([])
    })

    it('runs a model on its engine in a model process, streaming word by word', async () => {
      const weights = join(home, 'echo-weights.txt')
      await writeFile(weights, 'stand-in weights\n')
      const family = {
        model_ability: ['chat', 'generate'],
        model_name: 'echo-test',
        model_specs: [{model_format: 'echo', model_size_in_billions: 0, model_uri: pathToFileURL(weights).href, quantization: 'none'}],
      }
      expect((await api(service, 'POST', '/v1/model_registrations/LLM', {model: family, persist: false})).status).to.equal(200)
      const launched = await api(service, 'POST', '/v1/models', {model_engine: 'echo', model_name: 'echo-test'})
      expect(launched, JSON.stringify(launched.body)).to.deep.include({status: 200})

      const messages = [
        {content: 'Be brief.', role: 'system'},
        {content: 'hello there, plugin world', role: 'user'},
      ]
      const chat = await api(service, 'POST', '/v1/chat/completions', {messages, model: 'echo-test'})
      expect(chat.status, JSON.stringify(chat.body)).to.equal(200)
      expect(chat.body.choices[0]).to.deep.include({finish_reason: 'stop', message: {content: 'hello there, plugin world', reasoning_content: null, refusal: null, role: 'assistant'}})
      expect(chat.body.usage).to.deep.equal({completion_tokens: 4, prompt_tokens: 6, total_tokens: 10})

      const chunks = await sse(service, '/v1/chat/completions', {max_tokens: 3, messages, model: 'echo-test', stream: true})
      const deltas = chunks.map((chunk) => chunk.choices[0].delta.content).filter((content) => content !== undefined)
      // The last chunk, which carries the finish reason, has empty content, as Xinference's (and LangChain reads it).
      expect(deltas).to.deep.equal(['', 'hello', ' there,', ' plugin', ''])
      expect(chunks.at(-1).choices[0].finish_reason).to.equal('length')
    })
  })

  describe('a plugin whose register hook throws', () => {
    let service: RunningService

    before(async () => {
      const linked = await link('broken')
      expect(linked.exitCode, linked.stderr).to.equal(0)
      service = await startService({home})
    })

    after(async () => {
      await service?.stop()
    })

    it('does not keep the service from starting, and is reported by name', async () => {
      const {body} = await api(service, 'GET', '/v1/cluster/plugins')
      expect(body.problems).to.have.lengthOf(1)
      expect(body.problems[0]).to.deep.equal({message: 'broken-plugin fails on purpose', plugin: 'broken-plugin'})
      expect(body.plugins).to.not.include('broken-plugin')
      expect(service.output()).to.include('plugin broken-plugin: broken-plugin fails on purpose')
    })

    it('leaves the other plugins working', async () => {
      expect((await api(service, 'GET', '/v1/echo/ping')).body).to.deep.equal({plugin: 'engine-echo', pong: true})
      const {body} = await api(service, 'GET', '/v1/cluster/plugins')
      expect(body.engines.map((engine: {name: string}) => engine.name)).to.include.members(['echo', 'llama.cpp'])
    })

    it('is still listed by `servicectl plugins`, so it can be unlinked', async () => {
      const listed = await servicectl(['plugins'], {env: {SERVICE_HOME: home}})
      expect(listed.stdout).to.match(/^broken-plugin 0\.0\.1 \(link\) /m)
    })
  })
})
