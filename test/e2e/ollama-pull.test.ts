/**
 * Ollama's `/api/pull` and `/api/delete` against a real service-local and a local Hugging Face (the fake hub), with
 * the official `ollama` npm client: a catalogue model's GGUF weights are downloaded into the cache with Ollama's
 * NDJSON progress (or one object), a cached one is not downloaded again, and deleting removes the cache entry.
 */
import {expect} from 'chai'
import {execa} from 'execa'
import {join} from 'node:path'
import {Ollama} from 'ollama'

import {writeRandomLlamaGguf} from '../../plugins/engine-llama-cpp/src/gguf/random-llama.js'
import {FakeHub} from '../helpers/fake-hub.js'
import {readmeBlock} from '../helpers/readme.js'
import {callApi, type RunningService, startService, temporaryDirectory} from '../helpers/service.js'

const REPO = 'test-org/pull-GGUF'
const FAMILY = {
  context_length: 2048,
  model_ability: ['chat', 'generate'],
  model_lang: ['en'],
  model_name: 'pull-tiny',
  model_specs: [{model_format: 'ggufv2', model_size_in_billions: '0_5', model_src: {huggingface: {model_file_name_template: 'tiny-{quantization}.gguf', model_id: REPO, quantizations: ['q4_0', 'q8_0']}}}],
  version: 2,
}

describe("Ollama's pull and delete (service-local, a local Hugging Face, the official ollama npm client)", function () {
  this.timeout(120_000)
  let hub: FakeHub
  let service: RunningService
  let ollama: Ollama
  let bytes: number
  const cached = async () => ((await callApi(service, 'GET', '/v1/cache/models')).body.list as Array<{model_version: string}>).map((entry) => entry.model_version)
  const fileRequests = () => hub.requests.filter((request) => request.kind === 'file').length

  before(async () => {
    const tiny = join(await temporaryDirectory(), 'tiny.gguf')
    bytes = (await writeRandomLlamaGguf(tiny)).bytes
    hub = await FakeHub.start()
    await hub.addRepo(REPO, {'tiny-q4_0.gguf': tiny, 'tiny-q8_0.gguf': tiny})
    service = await startService({env: {HF_ENDPOINT: hub.url}})
    ollama = new Ollama({host: service.url})
    expect((await callApi(service, 'POST', '/v1/model_registrations/LLM', {model: FAMILY, persist: false})).status).to.equal(200)
  })

  after(async () => {
    await service?.stop()
    await hub?.stop()
  })

  it("downloads a model's weights with Ollama's NDJSON progress, the tag as the quantization", async () => {
    const parts = []
    for await (const part of await ollama.pull({model: 'pull-tiny:q4_0', stream: true})) parts.push(part)
    expect(parts[0]).to.deep.equal({status: 'pulling manifest'})
    const downloading = parts.filter((part) => part.status === 'downloading tiny-q4_0.gguf')
    expect(downloading.length).to.be.greaterThan(0)
    expect(downloading.at(-1)).to.include({completed: bytes, digest: 'tiny-q4_0.gguf', total: bytes})
    expect(parts.at(-1)).to.deep.equal({status: 'success'})
    expect(await cached()).to.include('pull-tiny--0_5B--ggufv2--q4_0')
  })

  it('answers one object with stream false, and downloads nothing again for a cached model', async () => {
    expect(await ollama.pull({model: 'pull-tiny:q8_0', stream: false})).to.deep.equal({status: 'success'})
    const before = fileRequests()
    const parts = []
    for await (const part of await ollama.pull({model: 'pull-tiny:q8_0', stream: true})) parts.push(part)
    expect(parts).to.deep.equal([{status: 'pulling manifest'}, {status: 'success'}])
    expect(fileRequests()).to.equal(before)
  })

  it('refuses an unknown model or quantization before streaming, with the reason', async () => {
    const unknown = (await ollama.pull({model: 'no-such-model', stream: true}).catch((error: Error) => error)) as Error & {status_code?: number}
    expect(unknown.status_code).to.be.within(400, 404)
    expect(unknown.message).to.contain('no-such-model')
    const quantization = (await ollama.pull({model: 'pull-tiny:q2_k', stream: false}).catch((error: Error) => error)) as Error & {status_code?: number}
    expect(quantization.status_code).to.equal(400)
    expect(quantization.message).to.contain('q2_k')
  })

  it('runs the example of docs/compatibility-notes.md', async () => {
    const example = (await readmeBlock('ollama-pull', 'docs/compatibility-notes.md')).replaceAll('http://127.0.0.1:9997', service.url)
    expect(JSON.parse((await execa('bash', ['-euo', 'pipefail', '-c', example])).stdout)).to.deep.equal({status: 'success'})
    expect(await cached()).to.include('tiny-random-llm--0_0001B--ggufv2--f32')
  })

  it("deletes a model's weights from the cache, and says when there are none", async () => {
    await ollama.delete({model: 'pull-tiny:q8_0'})
    expect(await cached()).to.not.include('pull-tiny--0_5B--ggufv2--q8_0')
    const again = (await ollama.delete({model: 'pull-tiny:q8_0'}).catch((error: Error) => error)) as Error & {status_code?: number}
    expect(again.status_code).to.equal(404)
  })
})
