/**
 * Self-healing in a cluster: a model process killed with SIGKILL on a worker is seen through the worker's heartbeat
 * and relaunched there by the supervisor, and answers the official OpenAI client through the supervisor again.
 */
import {expect} from 'chai'
import OpenAI from 'openai'

import {writeTinyChatModel} from '../helpers/models.js'
import {callApi, type RunningService, startProgram, temporaryDirectory, until} from '../helpers/service.js'

const FAST = {SERVICE_HEARTBEAT_INTERVAL: '0.2', SERVICE_WORKER_LOST_TIMEOUT: '5'}
const LAUNCH = {model_engine: 'llama.cpp', model_name: 'tiny-chat', model_uid: 'mended', n_ctx: 512, n_threads: 1}

describe('self-healing in a cluster (supervisor and a worker as real processes)', function () {
  this.timeout(120_000)
  let supervisor: RunningService
  let worker: RunningService

  before(async () => {
    const {family} = await writeTinyChatModel(await temporaryDirectory())
    supervisor = await startProgram('service-supervisor', ['-H', '127.0.0.1', '-p', '0'], {env: {...FAST, SERVICE_RESTART_ATTEMPTS: '2'}})
    worker = await startProgram('service-worker', ['-e', supervisor.url, '-H', '127.0.0.2'], {env: FAST})
    expect((await callApi(supervisor, 'POST', '/v1/model_registrations/LLM', {model: family})).status).to.equal(200)
  })

  after(async () => {
    for (const service of [worker, supervisor]) if (service) await service.stop()
  })

  it("relaunches a model whose process was killed on its worker, on that worker, and serves it again", async () => {
    expect((await callApi(supervisor, 'POST', '/v1/models', LAUNCH)).status).to.equal(200)
    const {pid} = (await callApi(supervisor, 'GET', '/v1/models/mended')).body
    process.kill(pid, 'SIGKILL')
    const healed = await until(async () => {
      const {body} = await callApi(supervisor, 'GET', '/v1/models/mended')
      return body.status === 'ready' && body.restarts === 1 ? body : undefined
    }, 'the model to be relaunched', 30_000)
    expect(healed.pid).to.not.equal(pid)
    expect(healed.last_error).to.contain('killed by SIGKILL')
    expect(healed.worker).to.equal(worker.url.replace('http://', ''))
    const openai = new OpenAI({apiKey: 'none', baseURL: `${supervisor.url}/v1`, maxRetries: 0})
    const chat = await openai.chat.completions.create({max_tokens: 2, messages: [{content: 'hi', role: 'user'}], model: 'mended'})
    expect(chat.choices[0].message.role).to.equal('assistant')
  })
})
