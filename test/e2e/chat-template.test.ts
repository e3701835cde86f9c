/** The chat template comes from the GGUF, else from the family entry; without either a model only completes. */
import {expect} from 'chai'
import {readFile} from 'node:fs/promises'
import {join} from 'node:path'
import {pathToFileURL} from 'node:url'

import {CHATML_TEMPLATE, writeRandomLlamaGguf} from '../../plugins/engine-llama-cpp/src/gguf/random-llama.js'
import {type RunningService, startService, temporaryDirectory} from '../helpers/service.js'

describe('chat templates', () => {
  let service: RunningService
  let ggufPath: string
  const post = async (path: string, body: unknown) => {
    const response = await fetch(`${service.url}${path}`, {body: JSON.stringify(body), headers: {'content-type': 'application/json'}, method: 'POST'})
    return {body: await response.json(), status: response.status}
  }

  const registerAndLaunch = async (name: string, extra: Record<string, unknown>) => {
    const family = {model_name: name, model_specs: [{model_format: 'ggufv2', model_size_in_billions: 1, model_uri: pathToFileURL(ggufPath).href, quantization: 'f32'}], ...extra}
    expect((await post('/v1/model_registrations/LLM', {model: family, persist: false})).status).to.equal(200)
    expect((await post('/v1/models', {model_engine: 'llama.cpp', model_name: name})).status).to.equal(200)
  }

  before(async () => {
    ggufPath = join(await temporaryDirectory(), 'no-template.gguf')
    await writeRandomLlamaGguf(ggufPath, {chatTemplate: null})
    service = await startService()
  })

  after(async () => service?.stop())

  it("uses the family's chat_template when the GGUF has none", async () => {
    await registerAndLaunch('family-template', {chat_template: CHATML_TEMPLATE})
    const chat = await post('/v1/chat/completions', {max_tokens: 3, messages: [{content: 'hi', role: 'user'}], model: 'family-template'})
    expect(chat.status).to.equal(200)
    expect(chat.body.usage.completion_tokens).to.equal(3)
    const log = await readFile(join(service.home, 'logs/models/family-template.log'), 'utf8')
    expect(log).to.match(/chat template: family[\s\S]*chat template rendered as JinjaTemplate/)
  })

  it('offers only completion when neither has a template, and says so on chat', async () => {
    await registerAndLaunch('no-template', {})
    const described = await (await fetch(`${service.url}/v1/models/no-template`)).json()
    expect(described.model_ability).to.deep.equal(['generate'])
    const chat = await post('/v1/chat/completions', {messages: [{content: 'hi', role: 'user'}], model: 'no-template'})
    expect(chat.status).to.equal(400)
    expect(chat.body.error.message).to.match(/cannot chat \(it has no chat template\); use \/v1\/completions/)
    expect((await post('/v1/completions', {max_tokens: 2, model: 'no-template', prompt: 'a'})).status).to.equal(200)
  })
})
