/**
 * Self-healing against a real `service-local` and real model processes: a model process killed with SIGKILL is
 * relaunched on its own (a new pid) and answers the official OpenAI client again; one that cannot start again stays
 * failed after the limit with the reason; a terminate during the backoff stops the relaunch.
 */
import {expect} from 'chai'
import {writeFile} from 'node:fs/promises'
import OpenAI from 'openai'

import {alive} from '../helpers/processes.js'
import {writeTinyChatModel} from '../helpers/models.js'
import {callApi, type RunningService, startService, temporaryDirectory, until} from '../helpers/service.js'

const LAUNCH = {model_engine: 'llama.cpp', n_ctx: 512, n_parallel: 2, n_threads: 1}

describe('self-healing (service-local, real model processes)', function () {
  this.timeout(120_000)
  let service: RunningService
  let openai: OpenAI
  const api = (method: string, path: string, body?: unknown) => callApi(service, method, path, body)
  const kinds = (uid: string) => eventKinds(service, uid)
  const since = async (uid: string, kind: string) => {
    const all = await kinds(uid)
    return all.slice(all.indexOf(kind))
  }

  async function register(name: string): Promise<string> {
    const {family, ggufPath} = await writeTinyChatModel(await temporaryDirectory(), name)
    expect((await api('POST', '/v1/model_registrations/LLM', {model: family, persist: false})).status).to.equal(200)
    return ggufPath
  }

  before(async () => {
    service = await startService({env: {SERVICE_RESTART_ATTEMPTS: '2'}})
    openai = new OpenAI({apiKey: 'none', baseURL: `${service.url}/v1`, maxRetries: 0})
  })

  after(async () => service?.stop())

  it('relaunches a model killed with SIGKILL; a chat sent right after the kill waits and succeeds', async () => {
    await register('healed')
    expect((await api('POST', '/v1/models', {...LAUNCH, model_name: 'healed'})).status).to.equal(200)
    const {pid} = (await api('GET', '/v1/models/healed')).body
    process.kill(pid, 'SIGKILL')
    await until(async () => ((await api('GET', '/v1/models/healed')).body.status === 'ready' ? undefined : true), 'the crash to be seen')
    const chat = await openai.chat.completions.create({max_tokens: 2, messages: [{content: 'hi', role: 'user'}], model: 'healed'})
    expect(chat.choices[0].message.role).to.equal('assistant')
    const model = (await api('GET', '/v1/models/healed')).body
    expect(model).to.include({restarts: 1, status: 'ready'})
    expect(model.last_error).to.contain('killed by SIGKILL')
    expect(model.pid).to.not.equal(pid)
    expect(alive(model.pid)).to.equal(true)
    expect(await since('healed', 'crash')).to.deep.equal(['crash', 'restart', 'ready'])
    expect((await api('DELETE', '/v1/models/healed')).status).to.equal(200)
  })

  it('relaunches a killed replica of a model with two while the other answers, and puts it back in the rotation', async () => {
    await register('paired')
    expect((await api('POST', '/v1/models', {...LAUNCH, model_name: 'paired', replica: 2})).status).to.equal(200)
    const replicas = async () => (await api('GET', '/v1/models/paired')).body.replicas as Array<{model_uid: string; pid: number}>
    const [killed, kept] = await replicas()
    process.kill(killed.pid, 'SIGKILL')
    await until(async () => ((await replicas()).length === 1 ? true : undefined), 'the killed replica to leave the rotation')
    const chat = await openai.chat.completions.create({max_tokens: 2, messages: [{content: 'hi', role: 'user'}], model: 'paired'})
    expect(chat.choices[0].message.role).to.equal('assistant')
    const back = await until(async () => {
      const now = await replicas()
      return now.length === 2 && !now.some((replica) => replica.pid === killed.pid) ? now : undefined
    }, 'the killed replica to come back')
    expect(back.map((replica) => replica.model_uid)).to.deep.equal([killed.model_uid, kept.model_uid])
    expect(back.find((replica) => replica.model_uid === kept.model_uid)!.pid, 'the other replica kept running').to.equal(kept.pid)
    expect(alive(back.find((replica) => replica.model_uid === killed.model_uid)!.pid)).to.equal(true)
    expect((await api('GET', '/v1/models/paired')).body).to.include({restarts: 1, status: 'ready'})
    for (let turn = 0; turn < 2; turn++) expect((await openai.chat.completions.create({max_tokens: 2, messages: [{content: 'hi', role: 'user'}], model: 'paired'})).choices).to.have.length(1)
    expect((await api('DELETE', '/v1/models/paired')).status).to.equal(200)
  })

  it('leaves a model that cannot start again failed after the limit, with the reason', async () => {
    const ggufPath = await register('broken')
    expect((await api('POST', '/v1/models', {...LAUNCH, model_name: 'broken'})).status).to.equal(200)
    const {pid} = (await api('GET', '/v1/models/broken')).body
    await writeFile(ggufPath, 'GGUF but not really')
    process.kill(pid, 'SIGKILL')
    const failed = await until(async () => {
      const {body} = await api('GET', '/v1/models/broken')
      return body.status === 'error' && body.restarts === 2 ? body : undefined
    }, 'the relaunches to give up', 30_000)
    expect(failed.last_error).to.match(/relaunch failed: .*not a GGUF file/)
    expect(failed.error).to.match(/relaunch failed/)
    const events = await kinds('broken')
    expect(events.filter((kind) => kind === 'restart')).to.have.length(2)
    expect(events.at(-1)).to.equal('launch_failed')
    const response = await api('POST', '/v1/chat/completions', {max_tokens: 2, messages: [{content: 'hi', role: 'user'}], model: 'broken'})
    expect(response.status).to.equal(503)
    expect((await api('DELETE', '/v1/models/broken')).status).to.equal(200)
  })

})

describe('self-healing stopped by a terminate (service-local, a long backoff)', function () {
  this.timeout(120_000)
  let service: RunningService
  const api = (method: string, path: string, body?: unknown) => callApi(service, method, path, body)

  before(async () => {
    // A first delay of a minute: the request and the terminate surely come during the backoff.
    service = await startService({env: {SERVICE_RESTART_ATTEMPTS: '2', SERVICE_RESTART_DELAY: '60', SERVICE_RESTART_WAIT: '0.2'}})
  })

  after(async () => service?.stop())

  it('answers a request that waited past SERVICE_RESTART_WAIT with a 503, and stops the relaunch on a terminate', async () => {
    const {family} = await writeTinyChatModel(await temporaryDirectory(), 'stopped')
    expect((await api('POST', '/v1/model_registrations/LLM', {model: family, persist: false})).status).to.equal(200)
    expect((await api('POST', '/v1/models', {...LAUNCH, model_name: 'stopped'})).status).to.equal(200)
    const {pid} = (await api('GET', '/v1/models/stopped')).body
    process.kill(pid, 'SIGKILL')
    await until(async () => ((await api('GET', '/v1/models/stopped')).body.status === 'restarting' ? true : undefined), 'the relaunch to begin')
    const waited = await api('POST', '/v1/chat/completions', {max_tokens: 2, messages: [{content: 'hi', role: 'user'}], model: 'stopped'})
    expect(waited.status).to.equal(503)
    expect(waited.body.error.code).to.equal('model_restarting')
    expect(waited.body.error.message).to.match(/being relaunched.*killed by SIGKILL/)
    expect((await api('DELETE', '/v1/models/stopped')).status).to.equal(200)
    expect((await api('GET', '/v1/models/stopped')).status).to.equal(404)
    expect((await eventKinds(service, 'stopped')).slice(-3)).to.deep.equal(['crash', 'restart', 'terminate'])
    expect(((await api('GET', '/v1/models')).body.data as Array<{id: string}>).map((model) => model.id)).to.not.include('stopped')
  })
})

async function eventKinds(service: RunningService, uid: string): Promise<string[]> {
  return ((await callApi(service, 'GET', `/v1/models/${uid}/events`)).body as Array<{kind: string}>).map((event) => event.kind)
}
