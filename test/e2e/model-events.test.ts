/**
 * Model events and the launch history against a real `service-local`: tiny-random-llm (made locally) launched,
 * its process killed with SIGKILL, relaunched and terminated; a download from a local Hugging Face; the history
 * read again after a restart on the same SERVICE_HOME; `servicectl events` and `history` print them.
 */
import {expect} from 'chai'
import {join} from 'node:path'

import {FakeHub} from '../helpers/fake-hub.js'
import {callApi, type RunningService, servicectl, startService, temporaryDirectory, until} from '../helpers/service.js'
import {writeRandomLlamaGguf} from '../../plugins/engine-llama-cpp/src/gguf/random-llama.js'

const LAUNCH = {model_engine: 'llama.cpp', model_name: 'tiny-random-llm', n_ctx: 256, n_threads: 1}
const REPO = 'test-org/events-GGUF'

describe('model events and launch history (service-local, servicectl)', function () {
  this.timeout(180_000)
  let home: string
  let hub: FakeHub
  let service: RunningService
  const api = (method: string, path: string, body?: unknown) => callApi(service, method, path, body)
  const kinds = async (uid: string) => ((await api('GET', `/v1/models/${uid}/events`)).body as Array<{kind: string}>).map((event) => event.kind)
  const start = () => startService({env: {HF_ENDPOINT: hub.url, SERVICE_RESTORE_MODELS: '0'}, home})

  before(async () => {
    home = await temporaryDirectory()
    const directory = await temporaryDirectory()
    const tiny = join(directory, 'tiny.gguf')
    await writeRandomLlamaGguf(tiny)
    hub = await FakeHub.start()
    await hub.addRepo(REPO, {'tiny-q4_0.gguf': tiny})
    service = await start()
  })

  after(async () => {
    await service?.stop()
    await hub?.stop()
  })

  it('shows launch, generating, loading and ready, then a kill -9 as a crash with its reason, then terminate', async () => {
    expect((await api('POST', '/v1/models', {...LAUNCH, model_uid: 'watched'})).status).to.equal(200)
    const events = (await api('GET', '/v1/models/watched/events')).body
    expect(events.map((event: {kind: string}) => event.kind)).to.deep.equal(['launch', 'generating', 'loading', 'ready'])
    expect(events[0].details).to.deep.include({model_engine: 'llama.cpp', model_format: 'ggufv2', model_name: 'tiny-random-llm', workers: ['local']})
    expect(events[0]).to.include({event_content: 'Launch model tiny-random-llm (LLM)', event_type: 'INFO'})
    for (const event of events) expect(event.event_ts).to.equal(Math.floor(event.timestamp / 1000))

    const {pid} = (await api('GET', '/v1/models/watched')).body
    process.kill(pid, 'SIGKILL')
    await until(async () => ((await kinds('watched')).includes('crash') ? true : undefined), 'the crash event')
    const crash = (await api('GET', '/v1/models/watched/events')).body.at(-1)
    expect(crash).to.include({event_type: 'ERROR', kind: 'crash'})
    expect(crash.details.reason).to.contain('was killed by SIGKILL')
    expect(crash.details.reason).to.equal((await api('GET', '/v1/models/watched')).body.error)

    expect((await api('DELETE', '/v1/models/watched')).status).to.equal(200)
    expect(await kinds('watched')).to.deep.equal(['launch', 'generating', 'loading', 'ready', 'crash', 'terminate'])
    expect((await api('GET', '/v1/models/never-launched/events')).status).to.equal(404)
  })

  it('declares both routes in /openapi.json with their response schemas and the models:list permission', async () => {
    const {paths} = (await api('GET', '/openapi.json')).body
    const events = paths['/v1/models/{model_uid}/events'].get
    expect(events['x-permission']).to.equal('models:list')
    expect(events.responses[200].content['application/json'].schema.items.title).to.equal('ModelEvent')
    const history = paths['/v1/launch_history'].get
    expect(history['x-permission']).to.equal('models:list')
    expect(history.responses[200].content['application/json'].schema.items.properties.outcome.enum).to.include('crashed')
  })

  it('shows download milestones of a launch that downloads, each with its bytes', async () => {
    const model = {context_length: 2048, model_ability: ['chat'], model_lang: ['en'], model_name: 'events-hub', model_specs: [{model_format: 'ggufv2', model_hub: 'huggingface', model_id: REPO, model_size_in_billions: '0_5', model_file_name_template: 'tiny-{quantization}.gguf', quantizations: ['q4_0']}], version: 2}
    expect((await api('POST', '/v1/model_registrations/LLM', {model, persist: false})).status).to.equal(200)
    expect((await api('POST', '/v1/models', {model_engine: 'llama.cpp', model_name: 'events-hub', n_ctx: 256, n_threads: 1, quantization: 'q4_0'})).status).to.equal(200)
    const events = (await api('GET', '/v1/models/events-hub/events')).body as Array<{kind: string; details: Record<string, number>}>
    const downloads = events.filter((event) => event.kind === 'download')
    expect(downloads[0].details.percent).to.equal(0)
    expect(downloads.at(-1)!.details.percent).to.equal(100)
    expect(downloads.at(-1)!.details.downloaded_bytes).to.equal(downloads.at(-1)!.details.total_bytes)
    expect(downloads.length).to.be.within(2, 5)
    expect(events.map((event) => event.kind).filter((kind) => kind !== 'download')).to.deep.equal(['launch', 'loading', 'ready'])
    expect((await api('DELETE', '/v1/models/events-hub')).status).to.equal(200)
  })

  it('keeps the launch history with outcomes across a restart, and servicectl prints events and history', async () => {
    expect((await api('POST', '/v1/models', {...LAUNCH, model_uid: 'left-running'})).status).to.equal(200)
    const before = (await api('GET', '/v1/launch_history')).body
    expect(before.map((launch: {model_uid: string; outcome: string}) => [launch.model_uid, launch.outcome])).to.deep.equal([
      ['left-running', 'running'],
      ['events-hub', 'terminated'],
      ['watched', 'crashed'],
    ])
    expect(before[2].reason).to.contain('was killed by SIGKILL')
    expect(before[2]).to.include({model_engine: 'llama.cpp', model_name: 'tiny-random-llm', model_type: 'LLM'})
    expect(before[2].data).to.deep.include({model_format: 'ggufv2', parameters: {n_ctx: 256, n_threads: 1}})
    expect(before[2].ended).to.be.at.least(before[2].started)

    await service.stop()
    service = await start()
    const after = (await api('GET', '/v1/launch_history?model_name=tiny-random-llm')).body
    expect(after.map((launch: {model_uid: string; outcome: string}) => [launch.model_uid, launch.outcome])).to.deep.equal([
      ['left-running', 'stopped'],
      ['watched', 'crashed'],
    ])
    expect(after[1]).to.deep.equal(before[2])

    const env = {SERVICE_ENDPOINT: service.url}
    const history = await servicectl(['history'], {env})
    expect(history.exitCode, history.stderr).to.equal(0)
    expect(history.stdout).to.match(/^UID\s+Name\s+Engine\s+Started\s+Ended\s+Outcome\s+Reason/m)
    expect(history.stdout).to.match(/^watched\s+tiny-random-llm\s+llama\.cpp\s+\S+\s+\S+\s+crashed\s+.*SIGKILL/m)
    const json = await servicectl(['history', '--model-name', 'events-hub', '--json'], {env})
    expect(JSON.parse(json.stdout).map((launch: {model_uid: string}) => launch.model_uid)).to.deep.equal(['events-hub'])

    expect((await api('POST', '/v1/models', {...LAUNCH, model_uid: 'printed'})).status).to.equal(200)
    // Its weights were made by the first launch and are in the cache now: nothing is generated.
    const printed = await servicectl(['events', '--model-uid', 'printed'], {env})
    expect(printed.exitCode, printed.stderr).to.equal(0)
    expect(printed.stdout).to.match(/^Time\s+Kind\s+Level\s+Event\s+Details$/m)
    expect(printed.stdout.split('\n').slice(2).map((line) => line.split(/\s+/)[1]).filter(Boolean)).to.deep.equal(['launch', 'loading', 'ready'])
    expect(printed.stdout).to.match(/\slaunch\s+INFO\s+Launch model tiny-random-llm \(LLM\)\s+.*model_engine=llama\.cpp/)
    const printedJson = JSON.parse((await servicectl(['events', '-u', 'printed', '--json'], {env})).stdout)
    expect(printedJson.map((event: {kind: string}) => event.kind)).to.deep.equal(['launch', 'loading', 'ready'])
    const missing = await servicectl(['events', '-u', 'nobody'], {env})
    expect(missing.exitCode).to.not.equal(0)
    expect(missing.stderr).to.contain('has no events')
  })
})
