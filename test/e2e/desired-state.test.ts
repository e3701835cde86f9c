/**
 * Desired state against real `service-local` processes on one SERVICE_HOME: the models running when the service
 * stopped (SIGTERM or SIGKILL) come back ready after a restart, with their uids and engine parameters, and answer
 * the official openai client without a launch call; a terminated model does not; with restoring off none do.
 */
import {expect} from 'chai'
import {readFile} from 'node:fs/promises'
import {join} from 'node:path'
import OpenAI from 'openai'

import {callApi, type RunningService, startService, temporaryDirectory, until} from '../helpers/service.js'

const TINY = {model_engine: 'llama.cpp', model_name: 'tiny-random-llm', n_ctx: 256, n_threads: 1}
const SECOND = {...TINY, model_uid: 'second', n_ctx: 512}

describe('desired state after a restart (service-local)', function () {
  this.timeout(240_000)
  let home: string
  let service: RunningService | undefined
  const api = (method: string, path: string, body?: unknown) => callApi(service!, method, path, body)
  const models = async () => ((await api('GET', '/v1/models')).body.data as Array<{id: string; status: string; engine_parameters: Record<string, unknown>}>)
  const restart = async (options: {args?: string[]; env?: Record<string, string>} = {}) => {
    await service?.stop()
    service = await startService({...options, home})
  }

  /** Waits until exactly the two launched models are ready again, then checks their parameters and that they answer. */
  async function bothBack() {
    const back = await until(async () => {
      const list = await models()
      return list.length === 2 && list.every((model) => model.status === 'ready') ? list : undefined
    }, 'both models to be restored', 120_000)
    const byUid = Object.fromEntries(back.map((model) => [model.id, model]))
    expect(Object.keys(byUid).sort()).to.deep.equal(['second', 'tiny-random-llm'])
    expect(byUid.second.engine_parameters).to.deep.include({n_ctx: 512, n_threads: 1})
    expect(byUid['tiny-random-llm'].engine_parameters).to.deep.include({n_ctx: 256, n_threads: 1})
    const openai = new OpenAI({apiKey: 'x', baseURL: `${service!.url}/v1`, maxRetries: 0})
    for (const model of ['tiny-random-llm', 'second']) {
      const reply = await openai.chat.completions.create({max_tokens: 3, messages: [{content: 'Hi', role: 'user'}], model})
      expect(reply.choices[0].message.role).to.equal('assistant')
      expect(reply.usage!.completion_tokens).to.be.greaterThan(0)
    }
  }

  before(async () => {
    home = await temporaryDirectory()
    service = await startService({home})
    expect((await api('POST', '/v1/models', TINY)).status).to.equal(200)
    expect((await api('POST', '/v1/models', SECOND)).status).to.equal(200)
    expect((await api('POST', '/v1/models', {...TINY, model_uid: 'goner'})).status).to.equal(200)
    expect((await api('DELETE', '/v1/models/goner')).status).to.equal(200)
  })

  after(async () => service?.stop())

  it('relaunches the models that ran at SIGTERM, not the terminated one, without a launch call', async () => {
    await restart()
    await bothBack()
    expect(service!.output()).to.contain('restoring 2 desired model(s): tiny-random-llm, second')
  })

  it('relaunches them after a kill -9 of the service too', async () => {
    service!.process.kill('SIGKILL')
    await service!.process
    service = await startService({home})
    await bothBack()
  })

  for (const [how, options] of [
    ['--no-restore-models', {args: ['--no-restore-models']}],
    ['SERVICE_RESTORE_MODELS=0', {env: {SERVICE_RESTORE_MODELS: '0'}}],
  ] as const)
    it(`relaunches nothing with ${how}, and still knows the models for a later start`, async () => {
      await restart(options)
      await until(async () => (service!.output().includes('restoring models is off: 2 desired model(s) left as they are') ? true : undefined), 'the service to say restoring is off')
      expect(await models()).to.deep.equal([])
      const desired = JSON.parse(await readFile(join(home, 'desired-models.json'), 'utf8')) as {models: Array<{launch: Record<string, unknown>}>}
      expect(desired.models.map((model) => model.launch)).to.deep.equal([
        {...TINY, model_uid: 'tiny-random-llm'},
        SECOND,
      ])
    })
})
