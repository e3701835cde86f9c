/**
 * Ollama's API against a real service-local with the catalogue's tiny-random LLM and embedding models, driven by the
 * official `ollama` npm client unchanged: listing, details, chat and generate streamed (NDJSON) and whole, JSON output,
 * embeddings in both of Ollama's shapes, and errors in Ollama's `{"error": "…"}` shape, which the client reads.
 */
import {expect} from 'chai'
import {Ollama} from 'ollama'

import {callApi, type RunningService, startService} from '../helpers/service.js'

describe("Ollama's API (service-local, the official ollama npm client)", function () {
  this.timeout(120_000)
  let service: RunningService
  let ollama: Ollama

  before(async () => {
    service = await startService()
    ollama = new Ollama({host: service.url})
    expect((await callApi(service, 'POST', '/v1/models', {model_engine: 'llama.cpp', model_name: 'tiny-random-llm', n_ctx: 512, n_threads: 1})).status).to.equal(200)
    expect((await callApi(service, 'POST', '/v1/models', {model_name: 'tiny-random-embedding', model_type: 'embedding', n_threads: 1})).status).to.equal(200)
  })

  after(async () => service?.stop())

  it('lists the running models as tags and as loaded, with their details, and shows one', async () => {
    const {models} = await ollama.list()
    expect(models.map((model) => model.name).sort()).to.deep.equal(['tiny-random-embedding', 'tiny-random-llm'])
    const llm = models.find((model) => model.name === 'tiny-random-llm')!
    expect(llm.details).to.include({family: 'tiny-random-llm', format: 'ggufv2'})
    const loaded = await ollama.ps()
    expect(loaded.models).to.have.length(2)
    const shown = await ollama.show({model: 'tiny-random-llm'})
    expect(shown.capabilities).to.include('completion')
    expect((await ollama.show({model: 'tiny-random-embedding'})).capabilities).to.deep.equal(['embedding'])
    expect((await ollama.version()).version).to.match(/^\d+\.\d+\.\d+/)
  })

  it('chats streaming as NDJSON lines, and whole, closing with Ollama\'s counts', async () => {
    const stream = await ollama.chat({messages: [{content: 'Hello there', role: 'user'}], model: 'tiny-random-llm', options: {num_predict: 8, seed: 1}, stream: true})
    const parts = []
    for await (const part of stream) parts.push(part)
    expect(parts.length).to.be.greaterThan(1)
    expect(parts.slice(0, -1).every((part) => part.done === false && part.message.role === 'assistant')).to.equal(true)
    const last = parts.at(-1)!
    expect(last).to.include({done: true, done_reason: 'length', eval_count: 8, model: 'tiny-random-llm'})
    expect(last.prompt_eval_count).to.be.greaterThan(0)
    const streamedText = parts.map((part) => part.message.content).join('')

    const whole = await ollama.chat({messages: [{content: 'Hello there', role: 'user'}], model: 'tiny-random-llm', options: {num_predict: 8, seed: 1}, stream: false})
    expect(whole.message.content).to.equal(streamedText)
    expect(whole).to.include({done: true, eval_count: 8})
  })

  it('generates in the chat template, or raw, and answers JSON when format asks', async () => {
    const templated = await ollama.generate({model: 'tiny-random-llm', options: {num_predict: 4}, prompt: 'Once upon a time', stream: false})
    expect(templated).to.include({done: true, eval_count: 4})
    expect(templated.response).to.be.a('string')
    const raw = await ollama.generate({model: 'tiny-random-llm', options: {num_predict: 4}, prompt: 'Once upon a time', raw: true, stream: true})
    let text = ''
    for await (const part of raw) text += part.response
    expect(text.length).to.be.greaterThan(0)
    const json = await ollama.generate({format: 'json', model: 'tiny-random-llm', options: {num_predict: 24}, prompt: 'Give me JSON', stream: false})
    expect(json.response.trimStart().startsWith('{')).to.equal(true)
    const preloaded = await ollama.generate({model: 'tiny-random-llm', prompt: '', stream: false})
    expect(preloaded).to.include({done: true, done_reason: 'load', response: ''})
  })

  it('embeds in both of Ollama\'s shapes, one unit-length vector per input', async () => {
    const {embeddings} = await ollama.embed({input: ['first text', 'second text'], model: 'tiny-random-embedding'})
    expect(embeddings).to.have.length(2)
    const norm = Math.hypot(...embeddings[0])
    expect(norm).to.be.closeTo(1, 1e-3)
    const {embedding} = await ollama.embeddings({model: 'tiny-random-embedding', prompt: 'first text'})
    expect(embedding).to.have.length(embeddings[0].length)
  })

  it("answers errors as {\"error\": \"…\"}, which the client throws with the service's message", async () => {
    const missing = await ollama.chat({messages: [{content: 'Hi', role: 'user'}], model: 'nothing-here', stream: false}).catch((error: Error & {status_code?: number}) => error)
    expect((missing as {status_code?: number}).status_code).to.equal(404)
    expect((missing as Error).message).to.match(/^model "nothing-here" is not running\./)
    const {body, status} = await callApi(service, 'POST', '/api/chat', {messages: 'Hi', model: 'tiny-random-llm'})
    expect(status).to.equal(400)
    expect(Object.keys(body)).to.deep.equal(['error'])
    expect(body.error).to.contain('messages')
    // Hostile schemas get the bounds of every route's JSON Schemas, before anything reaches the model.
    const huge = await callApi(service, 'POST', '/api/chat', {format: {items: {type: 'string'}, minItems: 200_000, type: 'array'}, messages: [{content: 'Hi', role: 'user'}], model: 'tiny-random-llm', stream: false})
    expect(huge.status).to.equal(400)
    expect(huge.body.error).to.match(/^`format` must be "json", or a JSON Schema/)
    let deep: Record<string, unknown> = {type: 'string'}
    for (let level = 0; level < 100; level++) deep = {properties: {a: deep}, type: 'object'}
    const tools = [{function: {name: 'deep', parameters: deep}, type: 'function'}]
    const nested = await callApi(service, 'POST', '/api/chat', {messages: [{content: 'Hi', role: 'user'}], model: 'tiny-random-llm', stream: false, tools})
    expect(nested.status).to.equal(400)
    expect(nested.body.error).to.include('more than 64 levels deep')
    const wrongType = await ollama.embed({input: 'text', model: 'tiny-random-llm'}).catch((error: Error) => error)
    expect((wrongType as Error).message).to.contain('cannot create embeddings')
  })
})
