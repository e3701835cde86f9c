/**
 * `POST /v1/models/memory` on a real `service-local` with generated GGUFs: a registered file that stopped being
 * a GGUF is a 400 naming the problem, for the estimate and the launch alike, without quoting the file.
 */
import {expect} from 'chai'
import {rm, writeFile} from 'node:fs/promises'

import {writeTinyChatModel, writeTinyRetrievalModel} from '../helpers/models.js'
import {callApi, type RunningService, startService, temporaryDirectory} from '../helpers/service.js'

const UNUSABLE = /^model_uri \(file:\/\/\S+\) cannot be used: it must be an existing, readable GGUF file \(model_format ggufv2\)/

describe('memory estimates (service-local, servicectl)', () => {
  let service: RunningService
  let swappedPath: string

  before(async () => {
    const directory = await temporaryDirectory()
    service = await startService()
    const swapped = await writeTinyChatModel(directory, 'swapped')
    swappedPath = swapped.ggufPath
    const models = [
      ['embedding', (await writeTinyRetrievalModel(directory, 'embedding')).family],
      ['rerank', (await writeTinyRetrievalModel(directory, 'rerank')).family],
      ['LLM', (await writeTinyChatModel(directory, 'tiny-chat')).family],
      ['LLM', swapped.family],
    ] as const
    for (const [type, family] of models) expect((await callApi(service, 'POST', `/v1/model_registrations/${type}`, {model: family, persist: false})).status).to.equal(200)
  })

  after(async () => service?.stop())

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
})
