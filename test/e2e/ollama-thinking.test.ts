/**
 * Ollama's `think` and `images` against a real service-local, with the official `ollama` npm client: a generated GGUF
 * chat model registered as a hybrid reasoning model (`<think>` tags). A random model never opens a reasoning block by
 * itself, so the conversation ends with an assistant turn that opens one, which Ollama's /api/chat continues.
 */
import {expect} from 'chai'
import {Ollama} from 'ollama'

import {writeTinyChatModel} from '../helpers/models.js'
import {callApi, type RunningService, startService, temporaryDirectory} from '../helpers/service.js'

const THINKER = 'tiny-thinker'
const THINKING = [
  {content: 'What is 2+2?', role: 'user'},
  {content: '<think>\n', role: 'assistant'},
]

describe("Ollama's think and images (service-local, the official ollama npm client)", function () {
  this.timeout(120_000)
  let service: RunningService
  let ollama: Ollama

  before(async () => {
    service = await startService()
    ollama = new Ollama({host: service.url})
    const {family} = await writeTinyChatModel(await temporaryDirectory(), THINKER)
    const model = {...family, model_ability: ['chat', 'reasoning', 'hybrid'], reasoning_end_tag: '</think>', reasoning_start_tag: '<think>'}
    expect((await callApi(service, 'POST', '/v1/model_registrations/LLM', {model, persist: false})).status).to.equal(200)
    const launched = await callApi(service, 'POST', '/v1/models', {model_engine: 'llama.cpp', model_name: THINKER, n_ctx: 1024, n_parallel: 1, n_threads: 1})
    expect(launched.status, JSON.stringify(launched.body)).to.equal(200)
  })

  after(async () => service?.stop())

  it('answers the thinking as message.thinking, whole and streamed, with think true or a level', async () => {
    const whole = await ollama.chat({messages: THINKING, model: THINKER, options: {num_predict: 8, temperature: 0}, stream: false, think: true})
    expect(whole.message.thinking).to.be.a('string').and.not.equal('')
    expect(whole.message.content).to.equal('')
    expect(whole).to.include({done: true, eval_count: 8})

    const stream = await ollama.chat({messages: THINKING, model: THINKER, options: {num_predict: 8, temperature: 0}, stream: true, think: 'high'})
    let thinking = ''
    for await (const part of stream) thinking += part.message.thinking ?? ''
    expect(thinking).to.equal(whole.message.thinking)
  })

  it('returns no thinking with think false', async () => {
    const answer = await ollama.chat({messages: THINKING, model: THINKER, options: {num_predict: 8, temperature: 0}, stream: false, think: false})
    expect(answer.message.thinking).to.equal(undefined)
    expect(answer).to.include({done: true})
  })

  it('takes think on /api/generate, and refuses a level it does not know, naming the field', async () => {
    const generated = await ollama.generate({model: THINKER, options: {num_predict: 4}, prompt: 'Once', stream: false, think: 'low'})
    expect(generated).to.include({done: true, eval_count: 4})
    const {body, status} = await callApi(service, 'POST', '/api/generate', {model: THINKER, prompt: 'Once', stream: false, think: 'max'})
    expect(status).to.equal(400)
    expect(body.error).to.match(/^`think` must be true, false, or "low", "medium", "high"/)
  })

  it('refuses images for a model that cannot see with a 400 naming the field, on /api/chat and /api/generate', async () => {
    const image = Buffer.from('not really a picture').toString('base64')
    for (const call of [
      ollama.chat({messages: [{content: 'What is this?', images: [image], role: 'user'}], model: THINKER, stream: false}),
      ollama.generate({images: [image], model: THINKER, prompt: 'What is this?', stream: false}),
    ]) {
      const refused = (await call.catch((error: Error) => error)) as Error & {status_code?: number}
      expect(refused.status_code).to.equal(400)
      expect(refused.message).to.match(/^`(messages\[0\]\.)?images\[0\]` is a picture, and model \S+ \(\S+\) cannot see images/)
    }
  })
})
