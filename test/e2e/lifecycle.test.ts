/**
 * A model's life against a real `service-local` and real model processes: a model process killed with SIGKILL,
 * and terminates sent together with launches at several moments.
 */
import {expect} from 'chai'
import {execa} from 'execa'
import {request as httpRequest} from 'node:http'
import {setTimeout as sleep} from 'node:timers/promises'

import {writeTinyChatModel} from '../helpers/models.js'
import {callApi, type RunningService, startService, temporaryDirectory, until} from '../helpers/service.js'

const LAUNCH = {model_engine: 'llama.cpp', model_name: 'tiny-chat', n_ctx: 512, n_parallel: 2, n_threads: 1}

/** The pids of a process's children (its model processes, for a service). */
async function childPids(pid: number): Promise<number[]> {
  const {stdout} = await execa('pgrep', ['-P', String(pid)], {reject: false})
  return stdout.split('\n').filter(Boolean).map(Number)
}

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
})
