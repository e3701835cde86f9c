/**
 * Xinference's autostart routes against a real `service-local`: a model added there is launched and, like every
 * model launched and not terminated, comes back after a restart; one removed from there keeps running and does not
 * come back; what cannot be honoured is refused naming the field. Xinference's own clients call these routes in
 * xinference-clients.test.ts.
 */
import {expect} from 'chai'
import {execa} from 'execa'

import {readmeBlock} from '../helpers/readme.js'
import {callApi, type RunningService, startService, temporaryDirectory, until} from '../helpers/service.js'

const TINY = {model_engine: 'llama.cpp', model_name: 'tiny-random-llm', n_ctx: 256, n_threads: 1}

describe("Xinference's autostart routes (service-local)", function () {
  this.timeout(180_000)
  let home: string
  let service: RunningService | undefined
  const api = (method: string, path: string, body?: unknown) => callApi(service!, method, path, body)
  const ready = (uid: string) => until(async () => ((await api('GET', `/v1/models/${uid}`)).body?.status === 'ready' ? true : undefined), `${uid} to be ready`, 120_000)
  const summary = async () => (await api('GET', '/v1/autostart/models/summary')).body

  before(async () => {
    home = await temporaryDirectory()
    service = await startService({home})
  })

  after(async () => service?.stop())

  it('launches a model added with its launch fields at the top level, and lists it with how it stands', async () => {
    expect((await api('GET', '/v1/autostart/models')).body).to.deep.equal({models: []})
    const added = await api('POST', '/v1/autostart/models', {...TINY, model_uid: 'kept', priority: 5})
    expect(added.status).to.equal(200)
    expect(added.body.models.map((entry: {launch: {model_uid: string}}) => entry.launch.model_uid)).to.deep.equal(['kept'])
    await ready('kept')
    const [entry] = (await api('GET', '/v1/autostart/models')).body.models
    expect(entry).to.deep.equal({enabled: true, launch: {...TINY, model_uid: 'kept'}, state: {instance_status: 'READY', last_error: null, status: 'active'}})
  })

  it('lists a model launched the usual way, since every such model is restored', async () => {
    expect((await api('POST', '/v1/models', {...TINY, model_uid: 'dropped'})).status).to.equal(200)
    expect(await summary()).to.deep.equal({models: [{enabled: true, model_uid: 'kept'}, {enabled: true, model_uid: 'dropped'}]})
    expect((await api('POST', '/v1/autostart/models', {launch: {...TINY, model_uid: 'dropped', n_ctx: 512}})).status, 'a running model is left as it runs').to.equal(200)
    const dropped = (await api('GET', '/v1/autostart/models')).body.models.find((model: {launch: {model_uid: string}}) => model.launch.model_uid === 'dropped')
    expect(dropped.launch.n_ctx).to.equal(256)
  })

  it('removes a model from the list without stopping it', async () => {
    expect((await api('DELETE', '/v1/autostart/models/dropped')).body).to.deep.equal({models: [{enabled: true, model_uid: 'kept'}]})
    expect((await api('GET', '/v1/models/dropped')).body.status).to.equal('ready')
  })

  it('refuses what it cannot honour, naming the field', async () => {
    const disabled = await api('POST', '/v1/autostart/models', {enabled: false, launch: TINY})
    expect([disabled.status, disabled.body.error.param]).to.deep.equal([400, 'enabled'])
    const empty = await api('POST', '/v1/autostart/models', {priority: 1})
    expect([empty.status, empty.body.error.param]).to.deep.equal([400, 'launch'])
    const badRetries = await api('POST', '/v1/autostart/models', {launch: TINY, max_retries: 'many'})
    expect([badRetries.status, badRetries.body.error.param]).to.deep.equal([400, 'max_retries'])
  })

  it('runs the example of docs/compatibility-notes.md', async () => {
    const example = (await readmeBlock('autostart', 'docs/compatibility-notes.md')).replaceAll('http://127.0.0.1:9997', service!.url)
    const {stdout} = await execa('bash', ['-euo', 'pipefail', '-c', example])
    const [added, listed, removed] = stdout.split('\n').map((line) => JSON.parse(line))
    expect(added.models.map((entry: {launch: {model_uid: string}}) => entry.launch.model_uid)).to.include('restored')
    expect(listed.models).to.deep.include({enabled: true, model_uid: 'restored'})
    expect(removed.models).to.not.deep.include({enabled: true, model_uid: 'restored'})
    expect((await api('DELETE', '/v1/models/restored')).status).to.equal(200)
  })

  it('brings back after a restart the model on the list, not the one removed from it', async () => {
    await service!.stop()
    service = await startService({home})
    await ready('kept')
    expect((await api('GET', '/v1/models')).body.data.map((model: {id: string}) => model.id)).to.deep.equal(['kept'])
  })
})
