/**
 * Models on demand across a cluster of real processes: a supervisor on 127.0.0.1 and two workers on 127.0.0.2 and
 * 127.0.0.3. A model unloaded after its last request (keep_alive 0) is launched again by the supervisor, which owns
 * the table of models, once for three concurrent requests, and serves all three.
 */
import {expect} from 'chai'

import {callApi, type RunningService, startProgram, temporaryDirectory, until} from '../helpers/service.js'

const FAST = {SERVICE_HEARTBEAT_INTERVAL: '0.2', SERVICE_WORKER_LOST_TIMEOUT: '1.5'}
const TINY = {model_engine: 'llama.cpp', model_name: 'tiny-random-llm', n_ctx: 256, n_threads: 1}

describe('models on demand in a cluster (supervisor and two workers as real processes)', function () {
  this.timeout(240_000)
  let supervisor: RunningService
  const workers: RunningService[] = []
  const running = async () => ((await callApi(supervisor, 'GET', '/v1/models')).body.data as Array<{id: string; worker: string}>)

  before(async () => {
    supervisor = await startProgram('service-supervisor', ['-H', '127.0.0.1', '-p', '0'], {env: FAST, home: await temporaryDirectory()})
    for (const host of ['127.0.0.2', '127.0.0.3']) workers.push(await startProgram('service-worker', ['-e', supervisor.url, '-H', host], {}))
    await until(async () => ((await callApi(supervisor, 'GET', '/v1/cluster/info')).body.workers?.ready === 2 ? true : undefined), 'both workers to join')
  })

  after(async () => {
    for (const service of [...workers, supervisor]) if (service) await service.stop()
  })

  it('launches an unloaded model once for concurrent requests, through the supervisor', async () => {
    expect((await callApi(supervisor, 'POST', '/v1/models', {...TINY, keep_alive: 0, model_uid: 'roamer'})).status).to.equal(200)
    await until(async () => ((await running()).length === 0 ? true : undefined), 'roamer to be unloaded', 60_000)

    const chat = {max_tokens: 3, messages: [{content: 'Hi', role: 'user'}], model: 'roamer'}
    const answers = await Promise.all([1, 2, 3].map(() => callApi(supervisor, 'POST', '/v1/chat/completions', {...chat, keep_alive: '10m'})))
    expect(answers.map((answer) => answer.status)).to.deep.equal([200, 200, 200])
    const [model] = await running()
    expect(model.id).to.equal('roamer')
    expect(workers.map((worker) => worker.url.replace('http://', ''))).to.include(model.worker)
    const launches = (await callApi(supervisor, 'GET', '/v1/launch_history?model_name=tiny-random-llm')).body as Array<{model_uid: string; outcome: string; reason: string | null}>
    expect(launches.map(({outcome, reason}) => [outcome, reason])).to.deep.equal([
      ['running', null],
      ['terminated', 'unloaded (keep alive 0)'],
    ])
  })
})
