/**
 * The observability seam on a real service started in this process from the build (so that its model processes run
 * the built host): a subscriber sees each finished request, with its model, token counts and time to first token,
 * streamed and not, and each change of a model's state, with the reason of a failed launch.
 */
import {Config} from '@oclif/core'
import {expect} from 'chai'
import OpenAI from 'openai'

import type {RunningService} from '../../dist/service/local.js'
import type {ModelStateChanged, RequestFinished} from '../../dist/kernel/observability.js'

import {startLocalService} from '../../dist/service/local.js'
import {loadSettings} from '../../dist/kernel/settings.js'
import {callApi, ROOT, temporaryDirectory, until} from '../helpers/service.js'

describe('service events (service-local in process, openai client)', function () {
  let service: RunningService
  let client: OpenAI
  const requests: RequestFinished[] = []
  const models: ModelStateChanged[] = []
  const finished = (path: string, count = 1) => until(async () => (requests.filter((event) => event.path === path).length >= count ? requests.filter((event) => event.path === path) : undefined), `${count} request(s) to ${path}`)

  before(async () => {
    const home = await temporaryDirectory()
    const config = await Config.load(ROOT)
    // The settings a start with this home reads, so that settings added later take their defaults here too.
    service = await startLocalService(config, {...(await loadSettings({SERVICE_HOME: home})), logLevel: 'warn', port: 0})
    service.events!.on('request', (event) => requests.push(event))
    service.events!.on('model', (event) => models.push(event))
    client = new OpenAI({apiKey: 'not-needed', baseURL: `${service.url}/v1`, maxRetries: 0})
  })

  after(async () => service?.stop())

  it('reports a launch as launching then ready, and the launch request with its route and status', async () => {
    const launched = await callApi(service, 'POST', '/v1/models', {model_engine: 'llama.cpp', model_name: 'tiny-random-llm', model_uid: 'tiny', n_threads: 1})
    expect(launched.status, JSON.stringify(launched.body)).to.equal(200)
    expect(models.map(({state, uid}) => ({state, uid}))).to.deep.equal([
      {state: 'launching', uid: 'tiny'},
      {state: 'ready', uid: 'tiny'},
    ])
    expect(models[0]).to.include({modelName: 'tiny-random-llm', modelType: 'LLM'})
    const [launch] = await finished('/v1/models')
    expect(launch).to.include({completed: true, method: 'POST', route: '/v1/models', status: 200, streamed: false})
    expect(launch.modelUid).to.equal(undefined)
  })

  it('reports a chat with its model, token counts, time to first token and request id', async () => {
    const reply = await client.chat.completions.create({max_tokens: 5, messages: [{content: 'Hello!', role: 'user'}], model: 'tiny'}, {headers: {'x-request-id': 'req-1'}})
    const [event] = await finished('/v1/chat/completions')
    expect(event).to.include({completed: true, modelUid: 'tiny', requestId: 'req-1', route: '/v1/chat/completions', status: 200, streamed: false})
    expect(event.promptTokens).to.equal(reply.usage!.prompt_tokens)
    expect(event.completionTokens).to.equal(reply.usage!.completion_tokens)
    expect(event.ttftMs).to.be.a('number').and.at.most(event.durationMs)
  })

  it('reports a streamed chat once its stream has ended', async () => {
    const stream = await client.chat.completions.create({max_tokens: 4, messages: [{content: 'Hi', role: 'user'}], model: 'tiny', stream: true, stream_options: {include_usage: true}})
    let usage: OpenAI.CompletionUsage | undefined
    for await (const chunk of stream) usage = chunk.usage ?? usage
    const [, event] = await finished('/v1/chat/completions', 2)
    expect(event).to.include({completed: true, completionTokens: usage!.completion_tokens, modelUid: 'tiny', promptTokens: usage!.prompt_tokens, status: 200, streamed: true})
    expect(event.ttftMs).to.be.a('number')
  })

  it('reports a refused request with its status, and a request no route takes by its path, its route as unmatched', async () => {
    const missing = await callApi(service, 'POST', '/v1/chat/completions', {messages: [{content: 'Hi', role: 'user'}], model: 'nobody'})
    expect(missing.status).to.equal(404)
    expect((await finished('/v1/chat/completions', 3))[2]).to.include({status: 404, streamed: false})
    await callApi(service, 'GET', '/v1/nowhere')
    expect((await finished('/v1/nowhere'))[0]).to.include({path: '/v1/nowhere', route: 'unmatched', status: 404})
  })

  it('reports a request whose client left before any answer as 499, not as the 404 of a response never written', async () => {
    const leaving = new AbortController()
    const body = {ignore_eos: true, max_tokens: 100_000, messages: [{content: 'Hi', role: 'user'}], model: 'tiny'}
    const answer = client.chat.completions.create(body as never, {signal: leaving.signal}).catch((error: Error) => error)
    setTimeout(() => leaving.abort(), 300)
    expect(await answer).to.be.instanceOf(Error)
    expect((await finished('/v1/chat/completions', 4))[3]).to.include({completed: false, status: 499, streamed: false})
  })

  it('reports a terminated model, and a failed launch as an error with its reason', async () => {
    expect((await callApi(service, 'DELETE', '/v1/models/tiny')).status).to.equal(200)
    const failed = await callApi(service, 'POST', '/v1/models', {model_engine: 'llama.cpp', model_name: 'tiny-random-llm', model_uid: 'too-long', n_ctx: 1e9, n_threads: 1})
    expect(failed.status).to.equal(400)
    expect(models.slice(2).map(({reason, state, uid}) => ({reason, state, uid}))).to.deep.equal([
      {reason: undefined, state: 'terminated', uid: 'tiny'},
      {reason: undefined, state: 'launching', uid: 'too-long'},
      {reason: failed.body.error.message, state: 'error', uid: 'too-long'},
    ])
    expect(failed.body.error.message).to.match(/n_ctx/)
  })
})
