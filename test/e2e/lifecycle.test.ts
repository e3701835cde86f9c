/**
 * A model's life against a real `service-local` and real model processes: a model process killed with SIGKILL,
 * terminates sent together with launches at several moments, and the service's own shutdown on SIGTERM (live
 * streams end with an error event, models stop before the service exits, a launch still downloading starts
 * no process).
 */
import Anthropic from '@anthropic-ai/sdk'
import {expect} from 'chai'
import {existsSync} from 'node:fs'
import {request as httpRequest} from 'node:http'
import {join} from 'node:path'
import {setTimeout as sleep} from 'node:timers/promises'
import OpenAI from 'openai'

import {FakeHub} from '../helpers/fake-hub.js'
import {alive, childPids} from '../helpers/processes.js'
import {writeRandomLlamaGguf} from '../../plugins/engine-llama-cpp/src/gguf/random-llama.js'
import {writeTinyChatModel} from '../helpers/models.js'
import {callApi, type RunningService, startProgram, startService, temporaryDirectory, until} from '../helpers/service.js'

const LAUNCH = {model_engine: 'llama.cpp', model_name: 'tiny-chat', n_ctx: 512, n_parallel: 2, n_threads: 1}

/**
 * A launch whose request the service has received (it answered `100 Continue`) but whose body is held until
 * `send()`: the moment before the launch's uid is in the model table, stretched.
 */
async function heldLaunch(service: RunningService, launch: Record<string, unknown>) {
  const body = JSON.stringify(launch)
  const request = httpRequest(`${service.url}/v1/models`, {headers: {'content-length': Buffer.byteLength(body), 'content-type': 'application/json', expect: '100-continue'}, method: 'POST'})
  const answered = new Promise<{status: number; body: any}>((resolve, reject) => {
    request.on('error', reject)
    request.on('response', async (response) => {
      let text = ''
      for await (const chunk of response) text += chunk
      resolve({body: JSON.parse(text), status: response.statusCode!})
    })
  })
  await new Promise((resolve) => request.once('continue', resolve))
  return {answered, send: () => request.end(body)}
}

describe('model lifecycle (service-local, real model processes)', function () {
  this.timeout(120_000)
  let family: Record<string, unknown>

  before(async () => {
    ;({family} = await writeTinyChatModel(await temporaryDirectory()))
  })

  describe('crashes and terminates', () => {
    let service: RunningService
    const api = (method: string, path: string, body?: unknown) => callApi(service, method, path, body)

    before(async () => {
      service = await startService()
      expect((await api('POST', '/v1/model_registrations/LLM', {model: family})).status).to.equal(200)
    })

    after(async () => service?.stop())

    it('after kill -9 of a model process, its progress says error with the reason, as the model does', async () => {
      expect((await api('POST', '/v1/models', {...LAUNCH, model_uid: 'crash-me'})).status).to.equal(200)
      const {pid} = (await api('GET', '/v1/models/crash-me')).body
      expect(await childPids(service.process.pid!)).to.include(pid)
      process.kill(pid, 'SIGKILL')
      const model = await until(async () => ((await api('GET', '/v1/models/crash-me')).body.status === 'error' ? (await api('GET', '/v1/models/crash-me')).body : undefined), 'the model to show the crash')
      expect(model.error).to.contain('was killed by SIGKILL')
      const progress = (await api('GET', '/v1/models/crash-me/progress')).body
      expect(progress).to.deep.include({model_uid: 'crash-me', stage: 'error'})
      expect(progress.error).to.deep.equal({code: 'model_crashed', message: model.error, status: 503})
      expect((await api('DELETE', '/v1/models/crash-me')).status).to.equal(200)
    })

    // null: the DELETE is sent while the launch's body is still on its way; a number: that many ms after it was sent.
    for (const delay of [null, 0, 5, 20, 80, 300]) {
      it(`a DELETE sent with a launch ${delay === null ? 'before its body arrives' : `${delay} ms after it`} answers success and leaves no model running`, async () => {
        const uid = `together-${delay ?? 'held'}`
        const launch = await heldLaunch(service, {...LAUNCH, model_uid: uid})
        let deleting: Promise<{status: number; body: any}>
        if (delay === null) {
          deleting = api('DELETE', `/v1/models/${uid}`)
          // Either order must hold; this makes it likely that the DELETE is in before the body.
          await sleep(100)
          launch.send()
        } else {
          launch.send()
          await sleep(delay)
          deleting = api('DELETE', `/v1/models/${uid}`)
        }

        const [launched, deleted] = await Promise.all([launch.answered, deleting])
        expect(deleted, JSON.stringify(deleted.body)).to.deep.equal({body: null, status: 200})
        if (launched.status !== 200) expect(launched.body.error).to.include({code: 'request_aborted', message: `the launch of ${uid} was cancelled.`})
        expect((await api('GET', '/v1/models')).body.data).to.deep.equal([])
        expect(await childPids(service.process.pid!)).to.deep.equal([])
      })
    }
  })

  describe('shutdown on SIGTERM', () => {
    const started: RunningService[] = []
    const start = async (...args: Parameters<typeof startService>) => {
      const service = await startService(...args)
      started.push(service)
      return service
    }

    after(async () => {
      // execa's subprocess has no exitCode of its own to ask; killing one that has ended does nothing.
      for (const service of started) service.process.kill('SIGKILL')
    })

    /** Starts a stream of each API family and waits for its first event, so both are live when the signal comes. */
    async function liveStreams(url: string, model: string) {
      const openai = new OpenAI({apiKey: 'x', baseURL: `${url}/v1`, maxRetries: 0})
      const anthropic = new Anthropic({apiKey: 'x', baseURL: `${url}/anthropic`, maxRetries: 0})
      // The generated model never ends its turn by itself, so both run until max_tokens or the shutdown.
      const chat = (await openai.chat.completions.create({max_tokens: 1500, messages: [{content: 'Hi', role: 'user'}], model, stream: true}))[Symbol.asyncIterator]()
      const message = (await anthropic.messages.create({max_tokens: 1500, messages: [{content: 'Hi', role: 'user'}], model, stream: true}))[Symbol.asyncIterator]()
      expect((await chat.next()).done).to.equal(false)
      expect((await message.next()).done).to.equal(false)
      /** How each stream ended: the error its client threw, or `completed`. */
      const outcome = async (iterator: AsyncIterator<unknown>) => {
        try {
          while (!(await iterator.next()).done);
          return 'completed'
        } catch (error) {
          return error as Error & {status?: number}
        }
      }

      return {chat: outcome(chat), message: outcome(message)}
    }

    it('ends live OpenAI and Anthropic streams with an error event, stops the models, then exits', async () => {
      const service = await start()
      expect((await callApi(service, 'POST', '/v1/model_registrations/LLM', {model: family})).status).to.equal(200)
      expect((await callApi(service, 'POST', '/v1/models', {...LAUNCH, n_ctx: 2048})).status).to.equal(200)
      const {pid} = (await callApi(service, 'GET', '/v1/models/tiny-chat')).body
      const streams = await liveStreams(service.url, 'tiny-chat')
      service.process.kill('SIGTERM')
      const [chat, message] = await Promise.all([streams.chat, streams.message])
      // The OpenAI client throws an error event as an APIError; Anthropic's names the SSE error.
      expect(chat, service.output()).to.be.instanceOf(OpenAI.APIError)
      expect((chat as Error).message).to.contain('the service is shutting down')
      expect(message).to.be.instanceOf(Anthropic.APIError)
      expect((message as Error).message).to.contain('the service is shutting down').and.contain('"type":"error"')
      const exit = await service.process
      expect(exit.exitCode, service.output()).to.equal(0)
      expect(alive(pid), `model process ${pid} outlived the service`).to.equal(false)
    })

    it('service-worker: ends a stream relayed by the supervisor with an error event, and exits after its models', async () => {
      const supervisor = await startProgram('service-supervisor', ['-H', '127.0.0.1', '-p', '0'])
      started.push(supervisor)
      const worker = await startProgram('service-worker', ['-e', supervisor.url, '-H', '127.0.0.1'])
      started.push(worker)
      expect((await callApi(supervisor, 'POST', '/v1/model_registrations/LLM', {model: family})).status).to.equal(200)
      expect((await callApi(supervisor, 'POST', '/v1/models', {...LAUNCH, n_ctx: 2048})).status).to.equal(200)
      const {pid} = (await callApi(supervisor, 'GET', '/v1/models/tiny-chat')).body
      expect(await childPids(worker.process.pid!)).to.deep.equal([pid])
      const streams = await liveStreams(supervisor.url, 'tiny-chat')
      worker.process.kill('SIGTERM')
      const [chat, message] = await Promise.all([streams.chat, streams.message])
      expect(chat).to.be.instanceOf(OpenAI.APIError)
      expect((chat as Error).message).to.match(/worker \S+ is shutting down/)
      expect(message).to.be.instanceOf(Anthropic.APIError)
      expect((message as Error).message).to.match(/worker \S+ is shutting down/)
      expect((await worker.process).exitCode, worker.output()).to.equal(0)
      expect(alive(pid), `model process ${pid} outlived the worker`).to.equal(false)
      await supervisor.stop()
    })

    it('cancels a launch still downloading: no model process starts after the shutdown began', async () => {
      const directory = await temporaryDirectory()
      const {bytes} = await writeRandomLlamaGguf(join(directory, 'tiny.gguf'))
      const hub = await FakeHub.start()
      try {
        await hub.addRepo('test-org/tiny-GGUF', {'tiny-q4_0.gguf': join(directory, 'tiny.gguf')})
        const hold = hub.hold('tiny-q4_0.gguf', Math.floor(bytes / 2))
        const service = await start({env: {HF_ENDPOINT: hub.url}})
        const hubFamily = {
          context_length: 2048,
          model_ability: ['chat'],
          model_name: 'hub-tiny',
          model_specs: [{model_format: 'ggufv2', model_size_in_billions: '0_5', model_src: {huggingface: {model_file_name_template: 'tiny-{quantization}.gguf', model_id: 'test-org/tiny-GGUF', quantizations: ['q4_0']}}}],
          version: 2,
        }
        expect((await callApi(service, 'POST', '/v1/model_registrations/LLM', {model: hubFamily})).status).to.equal(200)
        expect((await callApi(service, 'POST', '/v1/models?wait_ready=false', {...LAUNCH, model_name: 'hub-tiny'})).body).to.deep.equal({model_uid: 'hub-tiny'})
        await hold.reached
        service.process.kill('SIGTERM')
        await until(async () => (service.output().includes('shutting down') ? true : undefined), 'the service to begin its shutdown')
        // The rest of the weights arrive after the shutdown began: a launch that went on would now start the model.
        hold.release()
        const exit = await Promise.race([service.process, sleep(30_000).then(() => ({exitCode: 'still running'}))])
        expect(exit.exitCode, service.output()).to.equal(0)
        expect(service.output()).to.contain('launch of hub-tiny cancelled')
        expect(existsSync(join(service.home, 'logs', 'models', 'hub-tiny.log')), 'a model process was started').to.equal(false)
      } finally {
        await hub.stop()
      }
    })
  })
})
