/**
 * `servicectl cal-model-mem` and `POST /v1/models/memory` on a real `service-local` with generated GGUFs: the
 * estimate uses what a launch of the model's type would (embedding and rerank: one sequence, their trained
 * context, and no more context than that), and a registered file that stopped being a GGUF is a 400
 * naming the problem, for the estimate and the launch alike, without quoting the file.
 */
import {expect} from 'chai'
import {rm, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import {FakeHub} from '../helpers/fake-hub.js'
import {writeTinyChatModel, writeTinyRetrievalModel} from '../helpers/models.js'
import {callApi, type RunningService, servicectl, startService, temporaryDirectory} from '../helpers/service.js'

const UNUSABLE = /^model_uri \(file:\/\/\S+\) cannot be used: it must be an existing, readable GGUF file \(model_format ggufv2\)/

describe('memory estimates (service-local, servicectl)', () => {
  let service: RunningService
  let hub: FakeHub
  let swappedPath: string
  const estimate = async (...args: string[]) => {
    const result = await servicectl(['cal-model-mem', ...args], {env: {SERVICE_ENDPOINT: service.url}})
    expect(result.exitCode, result.stderr).to.equal(0)
    return result.stdout
  }

  before(async () => {
    const directory = await temporaryDirectory()
    await writeFile(join(directory, 'passwd'), 'root:x:0:0:root:/root:/bin/bash\n')
    hub = await FakeHub.start()
    await hub.addRepo('test-org/text-GGUF', {'text.gguf': join(directory, 'passwd')})
    service = await startService({env: {HF_ENDPOINT: hub.url}})
    const onHub = {
      model_name: 'hub-text',
      model_specs: [{model_format: 'ggufv2', model_size_in_billions: '0_5', model_src: {huggingface: {model_file_name_template: 'text.gguf', model_id: 'test-org/text-GGUF', quantizations: ['q4_0']}}}],
    }
    const swapped = await writeTinyChatModel(directory, 'swapped')
    swappedPath = swapped.ggufPath
    const models = [
      ['embedding', (await writeTinyRetrievalModel(directory, 'embedding')).family],
      ['rerank', (await writeTinyRetrievalModel(directory, 'rerank')).family],
      ['LLM', (await writeTinyChatModel(directory, 'tiny-chat')).family],
      ['LLM', swapped.family],
      ['LLM', onHub],
    ] as const
    for (const [type, family] of models) expect((await callApi(service, 'POST', `/v1/model_registrations/${type}`, {model: family, persist: false})).status).to.equal(200)
  })

  after(async () => {
    await service?.stop()
    await hub?.stop()
  })

  it('estimates embedding and rerank models with the one sequence and the trained context they launch with', async () => {
    for (const name of ['tiny-embedding', 'tiny-rerank']) {
      expect(JSON.parse(await estimate('-n', name, '--json')), name).to.include({context_length: 128, parallel: 1})
      expect(await estimate('-n', name)).to.match(/^Context: {8}128 tokens × 1 parallel sequence$/m)
    }

    expect(JSON.parse(await estimate('-n', 'tiny-chat', '--json'))).to.include({context_length: 2048, parallel: 4})
  })

  it('refuses a context above an embedding model’s, as its launch would, naming the length', async () => {
    const result = await servicectl(['cal-model-mem', '-n', 'tiny-embedding', '-c', '4096'], {env: {SERVICE_ENDPOINT: service.url}})
    expect(result.exitCode).not.to.equal(0)
    expect(result.stderr.replaceAll(/\s*\n ›\s+/g, ' ')).to.contain('`n_ctx` 4096 is longer than the 128 tokens this model was trained on')
    expect(JSON.parse(await estimate('-n', 'tiny-embedding', '-c', '64', '--json'))).to.include({context_length: 64, parallel: 1})
  })

  it('answers a registered file that is no longer GGUF, or is gone, with the same 400 for the estimate and the launch', async () => {
    const tries = async () => [
      await callApi(service, 'POST', '/v1/models/memory', {model_engine: 'llama.cpp', model_name: 'swapped'}),
      await callApi(service, 'POST', '/v1/models', {model_engine: 'llama.cpp', model_name: 'swapped'}),
    ]
    await writeFile(swappedPath, 'root:x:0:0:root:/root:/bin/bash\n')
    const swapped = await tries()
    await rm(swappedPath)
    const gone = await tries()
    for (const [index, {body, status}] of [...swapped, ...gone].entries()) {
      expect(status, String(index)).to.equal(400)
      expect(body.error.message).to.match(UNUSABLE)
      expect(body.error.message).to.equal(swapped[0].body.error.message)
    }
  })

  it('answers a file with the GGUF magic but a header llama.cpp cannot read with a 400 that quotes none of it', async () => {
    await writeFile(swappedPath, 'GGUF\u00ff\u00ff\u00ff\u00ff root:x:0:0')
    const estimated = await callApi(service, 'POST', '/v1/models/memory', {model_engine: 'llama.cpp', model_name: 'swapped'})
    const launched = await callApi(service, 'POST', '/v1/models', {model_engine: 'llama.cpp', model_name: 'swapped'})
    for (const {body, status} of [estimated, launched]) {
      expect(status).to.equal(400)
      expect(body.error.message).to.match(/swapped\.gguf is not a GGUF file llama\.cpp can read: it is of a GGUF version llama\.cpp does not read/)
      expect(body.error.message).not.to.match(/root|4294967295|ÿ/)
    }
  })

  it('answers a file on the hub that is not GGUF with a 400 naming it, quoting none of it', async () => {
    const {body, status} = await callApi(service, 'POST', '/v1/models/memory', {model_engine: 'llama.cpp', model_name: 'hub-text'})
    expect(status).to.equal(400)
    expect(body.error.message).to.match(/^http:\/\/\S+\/text\.gguf is not a GGUF file llama\.cpp can read: it does not start with the GGUF magic\./)
    expect(body.error.message).not.to.contain('root')
  })

  it('refuses to estimate a model no estimating engine reads, naming its weights and not an engine that cannot run it', async () => {
    const {body, status} = await callApi(service, 'POST', '/v1/models/memory', {model_name: 'tiny-random-image', model_type: 'image'})
    expect([status, body.error.param], JSON.stringify(body)).to.deep.equal([400, 'model_name'])
    expect(body.error.message).to.match(/^tiny-random-image cannot be estimated: .* its weights are diffusers; once launched/)
    expect(body.error.message).not.to.contain('the engines that can run it')
  })
})
