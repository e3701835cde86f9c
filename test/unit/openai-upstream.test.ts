/**
 * The operations of a program speaking the OpenAI API, against a real HTTP server on this machine that answers as
 * vLLM and SGLang do when a request fails: before the stream, with a status and an error body (FastAPI's validation
 * list included), or once the stream has begun, with an error event and then `[DONE]`.
 */
import type {ServerResponse} from 'node:http'

import {expect} from 'chai'

import type {ServiceError} from '../../src/kernel/errors.js'

import {openAICompatibleOperations} from '../../src/kernel/openai-upstream.js'
import {type AnsweringServer, answeringServer} from '../helpers/answering-server.js'

describe('OpenAI-compatible upstream: errors from the server', () => {
  let server: AnsweringServer

  before(async () => (server = await answeringServer()))
  after(() => server.close())

  const streamed = (...events: string[]) => (response: ServerResponse) => {
    response.writeHead(200, {'content-type': 'text/event-stream'})
    response.end(events.map((data) => `data: ${data}\n\n`).join(''))
  }

  const chunk = (content: string) => JSON.stringify({choices: [{delta: {content}, index: 0}]})

  /** The chat's events, or the error it ends with. */
  const chat = async () => {
    const events: unknown[] = []
    const endpoint = {baseUrl: server.baseUrl, modelUid: 'm', port: server.port, signal: new AbortController().signal}
    try {
      for await (const event of openAICompatibleOperations().chat({messages: [{content: 'hi', role: 'user'}]}, endpoint)) events.push(event)
    } catch (error) {
      return {error: error as ServiceError, events}
    }

    return {events}
  }

  it("fails the request with the server's error event, mid-stream, instead of an empty answer", async () => {
    server.answer = streamed(chunk('Hel'), JSON.stringify({error: {code: 400, message: 'This model\'s maximum context length is 512 tokens', object: 'error', param: null, type: 'BadRequestError'}}), '[DONE]')
    const {error, events} = await chat()
    expect(events, 'what came before the error').to.deep.equal([{text: 'Hel', type: 'text'}])
    expect(error).to.deep.include({code: 'invalid_request', message: "the model's server answered 400: This model's maximum context length is 512 tokens", status: 400})
  })

  it("reads older vLLM's error objects, and a server fault as a 502", async () => {
    server.answer = streamed(JSON.stringify({code: 400, message: 'bad stop', object: 'error', type: 'BadRequestError'}), '[DONE]')
    expect((await chat()).error).to.deep.include({message: "the model's server answered 400: bad stop", status: 400})
    server.answer = streamed(JSON.stringify({error: {code: 500, message: 'the engine died'}}), '[DONE]')
    expect((await chat()).error).to.deep.include({code: 'internal_error', message: "the model's server answered 500: the engine died", status: 502})
  })

  it("words FastAPI's list of validation errors as its JSON, not [object Object]", async () => {
    server.answer = (response) => {
      response.writeHead(422, {'content-type': 'application/json'})
      response.end(JSON.stringify({detail: [{loc: ['body', 'max_tokens'], msg: 'Input should be a valid integer', type: 'int_parsing'}]}))
    }

    const {error} = await chat()
    expect(error).to.deep.include({status: 422})
    expect(error!.message).to.equal(`the model's server answered 422: [{"loc":["body","max_tokens"],"msg":"Input should be a valid integer","type":"int_parsing"}]`)
  })
})

describe('OpenAI-compatible upstream: requests', () => {
  let server: AnsweringServer

  before(async () => (server = await answeringServer()))
  after(() => server.close())

  const sent = async (payload: Parameters<ReturnType<typeof openAICompatibleOperations>['chat']>[0]) => {
    server.answer = (response) => {
      response.writeHead(200, {'content-type': 'text/event-stream'})
      response.end('data: [DONE]\n\n')
    }
    const endpoint = {baseUrl: server.baseUrl, modelUid: 'm', port: server.port, signal: new AbortController().signal}
    for await (const event of openAICompatibleOperations().chat(payload, endpoint)) expect(event.type).to.equal('done')
    return JSON.parse(server.lastBody!) as Record<string, unknown>
  }

  it("asks the server to continue a final assistant message as vLLM takes it (without its default generation prompt), and only then", async () => {
    const messages = [
      {content: 'Hello!', role: 'user' as const},
      {content: 'Sure:', role: 'assistant' as const},
    ]
    expect(await sent({continueFinalMessage: true, messages})).to.deep.include({add_generation_prompt: false, continue_final_message: true})
    const plain = await sent({messages})
    expect(plain).to.not.have.any.keys('add_generation_prompt', 'continue_final_message')
  })

  it("passes the thinking switch as vLLM and SGLang take it, an argument of the chat template, and only when given", async () => {
    const messages = [{content: 'Hello!', role: 'user' as const}]
    expect(await sent({enableThinking: false, messages})).to.deep.include({chat_template_kwargs: {enable_thinking: false}})
    expect(await sent({messages})).to.not.have.any.keys('chat_template_kwargs')
  })
})

describe('OpenAI-compatible upstream: reasoning', () => {
  let server: AnsweringServer

  before(async () => (server = await answeringServer()))
  after(() => server.close())

  it("reads the reasoning of vLLM's and SGLang's reasoning parsers, as reasoning_content or newer vLLM's reasoning", async () => {
    const deltas = [{reasoning_content: 'Two and '}, {reasoning: 'two.'}, {content: 'Four', reasoning_content: null}]
    server.answer = (response) => {
      response.writeHead(200, {'content-type': 'text/event-stream'})
      response.end([...deltas.map((delta) => JSON.stringify({choices: [{delta, index: 0}]})), '[DONE]'].map((data) => `data: ${data}\n\n`).join(''))
    }
    const endpoint = {baseUrl: server.baseUrl, modelUid: 'm', port: server.port, signal: new AbortController().signal}
    const events: unknown[] = []
    for await (const event of openAICompatibleOperations().chat({messages: [{content: 'hi', role: 'user'}]}, endpoint)) events.push(event)
    expect(events.slice(0, -1)).to.deep.equal([
      {text: 'Two and ', type: 'reasoning'},
      {text: 'two.', type: 'reasoning'},
      {text: 'Four', type: 'text'},
    ])
  })
})
