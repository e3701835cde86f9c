/**
 * No request can crash a model (issue 32, item 3). A JSON Schema nested 3,000 deep (75 KB) in a response format, a
 * tool's parameters or an Anthropic tool's input_schema used to crash the llama.cpp model process in its message
 * decoding, and six of them in 30 s used up its relaunches; schemas llama.cpp cannot compile were answered 500. Now
 * each is a 400 naming the field and the limit or the reason, and the model stays ready, never relaunched, and answers.
 */
import Anthropic from '@anthropic-ai/sdk'
import {expect} from 'chai'
import OpenAI from 'openai'

import {serveTinyChatModel} from '../helpers/models.js'
import {callApi, type RunningService} from '../helpers/service.js'

const MODEL = 'tiny-chat'

/** A JSON Schema of objects nested `levels` deep, as JSON text: 1,500 levels are 3,000 of JSON. */
function nestedSchemaText(levels: number): string {
  return '{"type":"object","properties":{"a":'.repeat(levels) + '{"type":"string"}' + '}}'.repeat(levels)
}

const chatBody = (extra: Record<string, unknown>) => ({max_tokens: 8, messages: [{content: 'Hi', role: 'user'}], model: MODEL, ...extra})

describe('request bounds on a llama.cpp model (service-local, openai and @anthropic-ai/sdk clients)', function () {
  let service: RunningService
  let openai: OpenAI
  let anthropic: Anthropic

  before(async () => {
    ;({anthropic, openai, service} = await serveTinyChatModel(MODEL, {n_ctx: 512, n_parallel: 1, n_threads: 1}))
  })
  after(async () => service?.stop())

  /** The error a client's request was refused with; fails the test if it was not. */
  async function refused(request: () => Promise<unknown>): Promise<{status: number; message: string; param?: string}> {
    try {
      await request()
    } catch (error) {
      const {error: body, status} = error as {status: number; error: {message?: string; param?: string; error?: {message: string}}}
      return {message: body.message ?? body.error!.message, param: body.param, status}
    }

    throw new Error('the request was answered, not refused')
  }

  it('refuses a schema nested 3,000 deep in each place with a 400 naming the field and the limit, six times, and the model stays ready', async () => {
    const deep = JSON.parse(nestedSchemaText(1500)) as Record<string, unknown>
    for (let round = 0; round < 2; round++) {
      const format = await callApi(service, 'POST', '/v1/chat/completions', `{"max_tokens":8,"messages":[{"content":"Hi","role":"user"}],"model":"${MODEL}","response_format":{"type":"json_schema","json_schema":{"name":"deep","schema":${nestedSchemaText(1500)}}}}`)
      expect(format.status, JSON.stringify(format.body)).to.equal(400)
      expect(format.body.error).to.include({param: 'response_format.json_schema.schema'})
      expect(format.body.error.message).to.include('more than 64 levels deep')

      const tool = await refused(() =>
        openai.chat.completions.create({...chatBody({}), model: MODEL, messages: [{content: 'Hi', role: 'user'}], tools: [{function: {name: 'deep', parameters: deep}, type: 'function'}]}),
      )
      expect(tool).to.include({param: 'tools[0].function.parameters', status: 400})
      expect(tool.message).to.include('more than 64 levels deep')

      const input = await refused(() =>
        anthropic.messages.create({max_tokens: 8, messages: [{content: 'Hi', role: 'user'}], model: MODEL, tools: [{input_schema: deep as Anthropic.Tool.InputSchema, name: 'deep'}]}),
      )
      expect(input.status).to.equal(400)
      expect(input.message).to.include('`tools[0].input_schema` nests objects and arrays more than 64 levels deep')
    }

    const history = chatBody({
      messages: [
        {content: 'Hi', role: 'user'},
        {content: null, role: 'assistant', tool_calls: [{function: {arguments: '{"a":'.repeat(3000) + '1' + '}'.repeat(3000), name: 'deep'}, id: 'call_1', type: 'function'}]},
        {content: 'done', role: 'tool', tool_call_id: 'call_1'},
      ],
    })
    const calls = await callApi(service, 'POST', '/v1/chat/completions', history)
    expect(calls.status, JSON.stringify(calls.body)).to.equal(400)
    expect(calls.body.error.param).to.equal('messages[1].tool_calls[0].function.arguments')

    const bottomless = await callApi(service, 'POST', '/v1/chat/completions', `{"model":"${MODEL}","messages":[{"role":"user","content":"Hi"}],"tools":[{"type":"function","function":{"name":"deep","parameters":${'{"a":'.repeat(100_000)}1${'}'.repeat(100_000)}}}]}`)
    expect(bottomless.status, JSON.stringify(bottomless.body)).to.equal(400)

    const {body: described} = await callApi(service, 'GET', `/v1/models/${MODEL}`)
    expect(described).to.include({status: 'ready'})
    expect(described.restarts ?? 0).to.equal(0)
    const reply = await openai.chat.completions.create({max_tokens: 8, messages: [{content: 'Still there?', role: 'user'}], model: MODEL})
    expect(reply.choices[0].finish_reason).to.be.oneOf(['stop', 'length'])
  })

  it('answers schemas llama.cpp cannot compile with a 400 and the reason, not a 500', async () => {
    const cases: Array<[schema: Record<string, unknown>, param: string, reason: string]> = [
      [{$defs: {A: {$ref: '#/$defs/A'}}, $ref: '#/$defs/A'}, 'response_format.json_schema.schema.$defs.A.$ref', 'leads back to "A"'],
      [{$defs: {A: {anyOf: [{$ref: '#/$defs/B'}]}, B: {$ref: '#/$defs/A'}}, $ref: '#/$defs/A'}, 'response_format.json_schema.schema.$defs.', 'without an object or array in between'],
      [{items: {type: 'integer'}, minItems: 200_000, type: 'array'}, 'response_format.json_schema.schema.minItems', 'at most 10000'],
      [{minLength: 10_000_000, type: 'string'}, 'response_format.json_schema.schema.minLength', 'at most 10000'],
      [JSON.parse(nestedSchemaText(1000)), 'response_format.json_schema.schema', 'more than 64 levels deep'],
      [{items: {type: 'integer'}, minItems: 2000, type: 'array'}, 'response_format.json_schema.schema', 'repeats a value more than about 2,000 times'],
    ]
    for (const [schema, param, reason] of cases) {
      const {body, status} = await callApi(service, 'POST', '/v1/chat/completions', chatBody({response_format: {json_schema: {name: 'answer', schema}, type: 'json_schema'}}))
      expect(status, JSON.stringify(body)).to.equal(400)
      expect(body.error.param).to.satisfy((named: string) => named.startsWith(param))
      expect(body.error.message).to.include(reason)
    }

    const many = {function: {name: 'many', parameters: {properties: {list: {items: {type: 'integer'}, minItems: 5000, type: 'array'}}, type: 'object'}}, type: 'function'}
    for (const choice of ['required', 'auto']) {
      // In auto mode the grammar would be compiled only once the model called the tool, mid-reply.
      const called = await callApi(service, 'POST', '/v1/chat/completions', chatBody({tool_choice: choice, tools: [{function: {name: 'few', parameters: {type: 'object'}}, type: 'function'}, many]}))
      expect(called.status, JSON.stringify(called.body)).to.equal(400)
      expect(called.body.error.param).to.equal('tools[1].function.parameters')
      expect(called.body.error.message).to.include('repeats a value more than about 2,000 times')
    }

    const {body: described} = await callApi(service, 'GET', `/v1/models/${MODEL}`)
    expect(described).to.include({status: 'ready'})
    expect(described.restarts ?? 0).to.equal(0)
  })

  it('checks the model of an upload route before reading its files: pictures that are not pictures still get the 404 or 400 on `model`', async () => {
    const garbage = () => new Blob([Buffer.alloc(64 * 1024, 7)], {type: 'image/png'})
    const routes: Array<[path: string, files: string[]]> = [
      ['/v1/images/edits', ['image', 'mask']],
      ['/v1/images/variations', ['image']],
      ['/v1/images/inpainting', ['image', 'mask_image']],
      ['/v1/images/ocr', ['image']],
      ['/v1/video/generations/image', ['image']],
      ['/v1/video/generations/flf', ['first_frame', 'last_frame']],
    ]
    for (const [path, files] of routes)
      for (const [model, status] of [['no-such-model', 404], [MODEL, 400]] as const) {
        const form = new FormData()
        form.append('model', model)
        if (!path.endsWith('/ocr')) form.append('prompt', 'a cat')
        for (const field of files) form.append(field, garbage(), `${field}.png`)
        const response = await fetch(`${service.url}${path}`, {body: form, method: 'POST'})
        const {error} = (await response.json()) as {error: {param: string; message: string}}
        expect([response.status, error.param], `${path} with ${model}: ${error.message}`).to.deep.equal([status, 'model'])
      }
  })
})
