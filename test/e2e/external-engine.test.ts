/**
 * An engine whose models run as programs of their own, through a real `service-local`: the engine-external-echo
 * fixture (linked with `servicectl plugins link`) runs a standard-library Python server that speaks OpenAI chat
 * completions, and the official openai client talks to the service in front of it.
 */
import {expect} from 'chai'
import {readFile, rm, writeFile} from 'node:fs/promises'
import {join} from 'node:path'
import {pathToFileURL} from 'node:url'
import OpenAI from 'openai'

import {alive, childPids} from '../helpers/processes.js'
import {callApi, ROOT, type RunningService, servicectl, startService, temporaryDirectory, until} from '../helpers/service.js'

const FIXTURE = join(ROOT, 'test/fixtures/plugins/engine-external-echo')

describe('an engine that runs its models as external programs (engine-external-echo + service-local)', function () {
  let home: string
  let service: RunningService
  let openai: OpenAI
  const api = (method: string, path: string, body?: unknown) => callApi(service, method, path, body)
  const launch = (uid: string, parameters: Record<string, unknown> = {}) => api('POST', '/v1/models', {model_engine: 'external-echo', model_name: 'external-echo-test', model_uid: uid, ...parameters})
  const modelLog = (uid: string) => readFile(join(home, 'logs', 'models', `${uid}.log`), 'utf8').catch(() => '')
  const messages = [
    {content: 'Be brief.', role: 'system' as const},
    {content: 'hello there, external world', role: 'user' as const},
  ]

  before(async () => {
    home = await temporaryDirectory('service-external-')
    const linked = await servicectl(['plugins', 'link', FIXTURE, '--no-install'], {env: {SERVICE_HOME: home}})
    expect(linked.exitCode, linked.stderr).to.equal(0)
    service = await startService({home})
    openai = new OpenAI({apiKey: 'unused', baseURL: `${service.url}/v1`, maxRetries: 0})
    const weights = join(home, 'echo-weights.txt')
    await writeFile(weights, 'stand-in weights\n')
    const family = {
      model_ability: ['chat', 'generate'],
      model_name: 'external-echo-test',
      model_specs: [{model_format: 'echo', model_size_in_billions: 0, model_uri: pathToFileURL(weights).href, quantization: 'none'}],
    }
    expect((await api('POST', '/v1/model_registrations/LLM', {model: family, persist: false})).status).to.equal(200)
  })

  after(async () => {
    await service?.stop()
    await rm(home, {force: true, recursive: true})
  })

  it('launches the program on a port of its own and chats through it with the openai client, streaming and not', async () => {
    const launched = await launch('echo-chat')
    expect(launched.status, JSON.stringify(launched.body)).to.equal(200)
    const {pid} = (await api('GET', '/v1/models/echo-chat')).body
    expect(await childPids(service.process.pid!)).to.include(pid)
    expect(await modelLog('echo-chat')).to.match(/serving .*echo-weights.txt on port \d+/)

    const reply = await openai.chat.completions.create({messages, model: 'echo-chat'})
    expect(reply.choices[0]).to.deep.include({finish_reason: 'stop'})
    expect(reply.choices[0].message.content).to.equal('hello there, external world')
    expect(reply.usage).to.deep.include({completion_tokens: 4, prompt_tokens: 6, total_tokens: 10})

    const stream = await openai.chat.completions.create({max_tokens: 3, messages, model: 'echo-chat', stream: true})
    const deltas: string[] = []
    let finish: string | null = null
    for await (const chunk of stream) {
      const choice = chunk.choices[0]
      if (choice?.delta.content) deltas.push(choice.delta.content)
      finish = choice?.finish_reason ?? finish
    }

    expect(deltas.join('')).to.equal('hello there, external')
    expect(finish).to.equal('length')
  })

  it('a client that leaves mid-stream ends the upstream request: the program sees the disconnect', async () => {
    expect((await launch('echo-slow', {delay_ms: 300})).status).to.equal(200)
    const controller = new AbortController()
    const stream = await openai.chat.completions.create(
      {messages: [{content: 'one two three four five six seven eight nine ten', role: 'user'}], model: 'echo-slow', stream: true},
      {signal: controller.signal},
    )
    let words = 0
    const read = async () => {
      for await (const chunk of stream) if (chunk.choices[0]?.delta.content && ++words === 2) controller.abort()
    }

    // The client ends the stream when it is aborted, by an error or by ending the iteration.
    await read().catch(() => {})
    expect(words).to.equal(2)
    const line = await until(async () => (await modelLog('echo-slow')).match(/client disconnected after (\d+) of 10 words/)?.[0], 'the program to see the disconnect')
    expect(Number(line.match(/after (\d+)/)![1])).to.be.below(10)
    expect((await api('DELETE', '/v1/models/echo-slow')).status).to.equal(200)
  })

  it('after kill -9 of the program, the stream in flight, the model and later requests all report the crash', async () => {
    expect((await launch('echo-crash', {delay_ms: 200})).status).to.equal(200)
    const {pid} = (await api('GET', '/v1/models/echo-crash')).body
    const stream = await openai.chat.completions.create({messages: [{content: 'one two three four five six', role: 'user'}], model: 'echo-crash', stream: true})
    const inFlight = (async () => {
      for await (const chunk of stream) if (chunk.choices[0]?.delta.content) process.kill(pid, 'SIGKILL')
    })().then(
      () => undefined,
      (error: Error) => error,
    )
    expect((await inFlight)?.message).to.contain("echo-crash's program was killed by SIGKILL")
    const model = await until(async () => {
      const {body} = await api('GET', '/v1/models/echo-crash')
      return body.status === 'error' ? body : undefined
    }, 'the model to show the crash')
    expect(model.error).to.contain("echo-crash's program was killed by SIGKILL")
    const progress = (await api('GET', '/v1/models/echo-crash/progress')).body
    expect(progress.error).to.deep.equal({code: 'model_crashed', message: model.error, status: 503})
    const chat = await api('POST', '/v1/chat/completions', {messages, model: 'echo-crash'})
    expect(chat.status).to.equal(503)
    expect(chat.body.error).to.include({code: 'model_crashed', message: model.error})
    expect((await api('DELETE', '/v1/models/echo-crash')).status).to.equal(200)
  })

  it('terminate stops the program with SIGTERM: it exits and its pid is gone', async () => {
    expect((await launch('echo-stop')).status).to.equal(200)
    const {pid} = (await api('GET', '/v1/models/echo-stop')).body
    expect(alive(pid)).to.equal(true)
    expect((await api('DELETE', '/v1/models/echo-stop')).status).to.equal(200)
    expect(alive(pid), `program ${pid} outlived its terminate`).to.equal(false)
    expect(await modelLog('echo-stop')).to.contain('stopping on SIGTERM')
  })

  it('a program that never becomes healthy fails the launch within its timeout, its output left to the log', async () => {
    const launched = await launch('echo-unhealthy', {mode: 'never-healthy'})
    expect(launched.status).to.equal(500)
    expect(launched.body.error.code).to.equal('launch_failed')
    expect(launched.body.error.message).to.contain('did not answer GET /health with success within 3 s').and.contain("its output is in the model's log, logs/models/echo-unhealthy.log")
    expect(launched.body.error.message).to.not.contain('still loading the weights...')
    expect(await modelLog('echo-unhealthy')).to.contain('still loading the weights...')
    expect((await api('GET', '/v1/models')).body.data.map((model: {id: string}) => model.id)).to.not.include('echo-unhealthy')
    expect(await modelLog('echo-unhealthy'), 'the program is stopped once its launch failed').to.contain('stopping on SIGTERM')
  })

  it('a program that exits at start fails the launch with its exit code; what it wrote is in the log, not the answer, status or events', async () => {
    const launched = await launch('echo-exits', {mode: 'exit-at-start'})
    expect(launched.status).to.equal(500)
    expect(launched.body.error.code).to.equal('launch_failed')
    expect(launched.body.error.message)
      .to.contain("echo-exits's program exited with code 3 before it was ready")
      .and.contain("its output is in the model's log, logs/models/echo-exits.log")
    const written = 'cannot load the model: these weights are not an echo model'
    expect(await modelLog('echo-exits')).to.contain(written)
    const seen = JSON.stringify([launched.body, (await api('GET', '/v1/models/echo-exits/events')).body, (await api('GET', '/v1/launch_history')).body])
    expect(seen).to.contain('exited with code 3')
    expect(seen).to.not.contain(written)
  })

  it('leaves no program behind when the service stops', async () => {
    expect((await launch('echo-last')).status).to.equal(200)
    const {pid} = (await api('GET', '/v1/models/echo-last')).body
    service.process.kill('SIGTERM')
    const exit = await service.process
    expect(exit.exitCode, service.output()).to.equal(0)
    expect(alive(pid), `program ${pid} outlived the service`).to.equal(false)
  })
})
