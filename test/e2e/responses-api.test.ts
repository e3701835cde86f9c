/**
 * OpenAI's Responses API (`/v1/responses`) of a real `service-local`, driven with the official `openai` client on
 * generated GGUF chat models served by llama.cpp: every answer, stream event and item list is checked against OpenAI's
 * own API description (shared/conformance), and stored responses against their owners under access control.
 */
import {expect} from 'chai'
import {execa} from 'execa'
import {readdir, rm, stat} from 'node:fs/promises'
import {join} from 'node:path'
import OpenAI from 'openai'

import type {RandomLlamaOptions} from '../../plugins/engine-llama-cpp/src/gguf/random-llama.js'
import {apiKeyOf, writeTestAuthConfig} from '../helpers/auth.js'
import {assertOpenAiSchema} from '../helpers/conformance.js'
import {writeTinyChatModel} from '../helpers/models.js'
import {readmeBlock} from '../helpers/readme.js'
import {callApi, ROOT, type RunningService, startService, temporaryDirectory} from '../helpers/service.js'

const MODEL = 'tiny-chat'
/**
 * Its template opens a reasoning block in every assistant turn, as DeepSeek-R1's does, so the random model's answer
 * starts as thinking; with tags of its own, which the engine's template matching does not take for ones it knows.
 */
const THINKER = 'tiny-thinker'
const THINKING_TEMPLATE =
  "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n'}}{% if message['role'] == 'assistant' %}{{'<reason>\\n'}}{% endif %}" +
  "{{message['content'] + '<|im_end|>\\n'}}{% endfor %}{% if add_generation_prompt %}{{'<|im_start|>assistant\\n<reason>\\n'}}{% endif %}"

const WEATHER = {
  description: 'Current weather in a city',
  name: 'get_weather',
  parameters: {additionalProperties: false, properties: {city: {maxLength: 12, type: 'string'}}, required: ['city'], type: 'object'},
  strict: true,
  type: 'function' as const,
}

async function launch(service: RunningService, directory: string, name: string, {extra = {}, gguf = {}, headers = {}}: {extra?: Record<string, unknown>; gguf?: RandomLlamaOptions; headers?: Record<string, string>} = {}) {
  const {family} = await writeTinyChatModel(directory, name, gguf)
  const registered = await callApi(service, 'POST', '/v1/model_registrations/LLM', {model: {...family, ...extra}, persist: false}, headers)
  expect(registered.status, JSON.stringify(registered.body)).to.equal(200)
  const launched = await callApi(service, 'POST', '/v1/models', {model_engine: 'llama.cpp', model_name: name, n_ctx: 2048, n_parallel: 2, n_threads: 1}, headers)
  expect(launched.status, JSON.stringify(launched.body)).to.equal(200)
}

/** Checks a stream event against OpenAI's schema of its own type: `response.output_text.delta` is a ResponseTextDeltaEvent. */
function assertStreamEvent(event: {type: string}): void {
  const words = event.type.replace(/^response\./, '').replace('output_text', 'text').split(/[._]/)
  assertOpenAiSchema(`Response${words.map((word) => word[0].toUpperCase() + word.slice(1)).join('')}Event`, event)
}

/** The OpenAI error of a failed call: its status and the field it names. */
async function refusal(call: Promise<unknown>): Promise<{status: number; param: string | null | undefined; message: string}> {
  try {
    await call
  } catch (error) {
    if (error instanceof OpenAI.APIError) return {message: error.message, param: error.param, status: error.status ?? 0}
    throw error
  }

  throw new Error('the call succeeded')
}

describe('OpenAI Responses API (service-local, openai client)', function () {
  let service: RunningService
  let client: OpenAI

  before(async function () {
    const directory = await temporaryDirectory()
    service = await startService()
    client = new OpenAI({apiKey: 'any', baseURL: `${service.url}/v1`, maxRetries: 0})
    await launch(service, directory, MODEL)
    // Without a template in the GGUF, the engine renders the family's as it is written.
    const thinking = {chat_template: THINKING_TEMPLATE, model_ability: ['chat', 'reasoning'], reasoning_end_tag: '</reason>', reasoning_start_tag: '<reason>'}
    await launch(service, directory, THINKER, {extra: thinking, gguf: {chatTemplate: null}})
  })

  after(async () => service?.stop())

  it('answers text input with instructions in OpenAI\'s Response shape, with usage, and stores it privately under SERVICE_HOME', async () => {
    const response = await client.responses.create({input: 'Say something.', instructions: 'You are terse.', max_output_tokens: 8, model: MODEL, temperature: 0, top_p: 0.9})
    assertOpenAiSchema('Response', response)
    expect(response.id).to.match(/^resp_/)
    expect(response.status).to.equal('incomplete')
    expect(response.incomplete_details).to.deep.equal({reason: 'max_output_tokens'})
    expect(response.instructions).to.equal('You are terse.')
    expect(response.output).to.have.length(1)
    expect(response.output_text).to.be.a('string').and.not.equal('')
    expect(response.usage?.output_tokens).to.equal(8)
    expect(response.usage?.input_tokens).to.be.greaterThan(5)
    expect(response.usage?.total_tokens).to.equal(response.usage!.input_tokens + 8)

    const files = await readdir(join(service.home, 'responses'))
    expect(files).to.include(`${response.id}.json`)
    expect((await stat(join(service.home, 'responses', `${response.id}.json`))).mode & 0o777).to.equal(0o600)
    expect((await stat(join(service.home, 'responses'))).mode & 0o777).to.equal(0o700)
  })

  it('streams the event sequence OpenAI defines, numbered, and stores what it streamed', async () => {
    const stream = await client.responses.create({input: [{content: 'Hi', role: 'user'}], max_output_tokens: 6, model: MODEL, stream: true})
    const events: OpenAI.Responses.ResponseStreamEvent[] = []
    for await (const event of stream) events.push(event)
    for (const event of events) assertStreamEvent(event)
    expect(events.map((event) => event.sequence_number)).to.deep.equal(events.map((_, index) => index))
    const types = events.map((event) => event.type)
    const deltas = types.filter((type) => type === 'response.output_text.delta').length
    expect(deltas).to.be.greaterThan(0)
    expect(types).to.deep.equal([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      ...Array.from({length: deltas}, () => 'response.output_text.delta'),
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.incomplete',
    ])
    // The route sends the live response and items (responses-run.ts): each event must still show them as they were then.
    for (const event of events.slice(0, 2) as OpenAI.Responses.ResponseCreatedEvent[]) expect([event.response.status, event.response.output]).to.deep.equal(['in_progress', []])
    const added = events[2] as OpenAI.Responses.ResponseOutputItemAddedEvent
    expect(added.item).to.deep.include({content: [], status: 'in_progress'})
    const last = events.at(-1) as OpenAI.Responses.ResponseIncompleteEvent
    const text = events.flatMap((event) => (event.type === 'response.output_text.delta' ? [event.delta] : [])).join('')
    expect((events.find((event) => event.type === 'response.output_text.done') as OpenAI.Responses.ResponseTextDoneEvent).text).to.equal(text)
    const stored = await client.responses.retrieve(last.response.id)
    assertOpenAiSchema('Response', stored)
    expect(stored.output_text).to.equal(text)
    expect(stored.usage).to.deep.equal(last.response.usage)
    // A streamed reply's response carries koa's pipeline listeners next to the service's own: no leak warning a request.
    expect(service.output()).not.to.include('MaxListenersExceededWarning')
  })

  it('calls a function, takes its output back with previous_response_id, and lists the conversation as input items', async () => {
    const first = await client.responses.create({input: 'Weather in Paris?', max_output_tokens: 200, model: MODEL, tool_choice: {name: 'get_weather', type: 'function'}, tools: [WEATHER]})
    assertOpenAiSchema('Response', first)
    const call = first.output.find((item): item is OpenAI.Responses.ResponseFunctionToolCall => item.type === 'function_call')!
    expect(call.name).to.equal('get_weather')
    expect(JSON.parse(call.arguments)).to.have.keys('city')

    const second = await client.responses.create({
      input: [{call_id: call.call_id, output: '{"temperature": 21}', type: 'function_call_output'}],
      max_output_tokens: 4,
      model: MODEL,
      previous_response_id: first.id,
      tools: [WEATHER],
    })
    assertOpenAiSchema('Response', second)
    expect(second.previous_response_id).to.equal(first.id)
    expect(second.output_text).to.not.equal('')

    // Without storing, the client sends the conversation back itself: the first answer's output items as they came.
    const resent = await client.responses.create({
      input: [{content: 'Weather in Paris?', role: 'user'}, ...first.output, {call_id: call.call_id, output: '{"temperature": 21}', type: 'function_call_output'}],
      max_output_tokens: 4,
      model: MODEL,
      store: false,
      tools: [WEATHER],
    })
    expect(resent.usage?.input_tokens).to.equal(second.usage?.input_tokens)

    const items = await client.responses.inputItems.list(second.id, {order: 'asc'})
    assertOpenAiSchema('ResponseItemList', (await callApi(service, 'GET', `/v1/responses/${second.id}/input_items?order=asc`)).body)
    expect(items.data.map((item) => item.type)).to.deep.equal(['message', 'function_call', 'function_call_output'])
    const newestFirst = await client.responses.inputItems.list(second.id, {limit: 1})
    expect(newestFirst.data.map((item) => item.type)).to.deep.equal(['function_call_output'])
  })

  it('streams a function call as argument deltas and their done event', async () => {
    const stream = await client.responses.create({input: 'Weather?', max_output_tokens: 200, model: MODEL, store: false, stream: true, tool_choice: 'required', tools: [WEATHER]})
    const events: OpenAI.Responses.ResponseStreamEvent[] = []
    for await (const event of stream) events.push(event)
    for (const event of events) assertStreamEvent(event)
    // The name is in OpenAI's description of the event, though not yet in this client's type.
    const done = events.find((event) => event.type === 'response.function_call_arguments.done') as OpenAI.Responses.ResponseFunctionCallArgumentsDoneEvent & {name: string}
    const deltas = events.flatMap((event) => (event.type === 'response.function_call_arguments.delta' ? [event.delta] : [])).join('')
    expect(done.name).to.equal('get_weather')
    expect(done.arguments).to.equal(deltas)
    expect(JSON.parse(done.arguments)).to.have.keys('city')
  })

  it('answers in the JSON a text.format json_schema asks for', async () => {
    const schema = {additionalProperties: false, properties: {answer: {enum: ['yes', 'no']}}, required: ['answer'], type: 'object'}
    const response = await client.responses.create({input: 'Yes or no?', max_output_tokens: 200, model: MODEL, store: false, text: {format: {name: 'verdict', schema, strict: true, type: 'json_schema'}}})
    assertOpenAiSchema('Response', response)
    expect(response.text?.format).to.deep.include({name: 'verdict', type: 'json_schema'})
    expect(JSON.parse(response.output_text)).to.have.property('answer').that.is.oneOf(['yes', 'no'])
    const object = await client.responses.create({input: 'JSON please', max_output_tokens: 60, model: MODEL, store: false, text: {format: {type: 'json_object'}}})
    expect(object.output_text.trim().startsWith('{')).to.equal(true)
  })

  it('returns a thinking model\'s reasoning as a reasoning item with its summary text, and reasoning.effort none turns it off', async () => {
    const response = await client.responses.create({input: 'What is 2+2?', max_output_tokens: 8, model: THINKER, reasoning: {effort: 'low', summary: 'auto'}, store: false})
    assertOpenAiSchema('Response', response)
    const reasoning = response.output[0] as OpenAI.Responses.ResponseReasoningItem
    expect(reasoning.type, JSON.stringify(response.output)).to.equal('reasoning')
    expect(reasoning.summary[0].text).to.be.a('string').and.not.equal('')
    expect(response.reasoning?.effort).to.equal('low')

    const stream = await client.responses.create({input: 'What is 2+2?', max_output_tokens: 4, model: THINKER, store: false, stream: true})
    const types: string[] = []
    for await (const event of stream) {
      assertStreamEvent(event)
      types.push(event.type)
    }

    expect(types.slice(2, 4)).to.deep.equal(['response.output_item.added', 'response.reasoning_summary_part.added'])
    expect(types).to.include('response.reasoning_summary_text.done')

    const plain = await client.responses.create({input: 'What is 2+2?', max_output_tokens: 4, model: THINKER, reasoning: {effort: 'none'}, store: false})
    expect(plain.output.filter((item) => item.type === 'reasoning')).to.deep.equal([])
    expect(plain.usage?.output_tokens).to.equal(4)
  })

  it('retrieves, deletes and then no longer finds a stored response; an unknown previous_response_id is a 404 naming it', async () => {
    const response = await client.responses.create({input: 'Hello', max_output_tokens: 2, model: MODEL})
    expect((await client.responses.retrieve(response.id)).id).to.equal(response.id)
    const deleted = await callApi(service, 'DELETE', `/v1/responses/${response.id}`)
    expect(deleted.body).to.deep.equal({deleted: true, id: response.id, object: 'response'})
    expect((await refusal(client.responses.retrieve(response.id))).status).to.equal(404)
    expect((await refusal(client.responses.delete(response.id))).status).to.equal(404)

    const unknown = await refusal(client.responses.create({input: 'Hi', model: MODEL, previous_response_id: 'resp_missing'}))
    expect(unknown).to.include({param: 'previous_response_id', status: 404})
    expect(unknown.message).to.contain('resp_missing')
    // One made with store false is not kept.
    const unstored = await client.responses.create({input: 'Hi', max_output_tokens: 2, model: MODEL, store: false})
    expect((await refusal(client.responses.retrieve(unstored.id))).status).to.equal(404)
    expect((await refusal(client.responses.cancel(unstored.id))).status).to.equal(404)
  })

  it('runs a response in the background, which can be cancelled, and answers it once it ends', async () => {
    const finished = await client.responses.create({background: true, input: 'Hi', max_output_tokens: 4, model: MODEL})
    expect(finished.background).to.equal(true)
    let done = await client.responses.retrieve(finished.id)
    for (let tries = 0; done.status === 'in_progress' && tries < 500; tries++) done = await client.responses.retrieve(finished.id)
    expect(done.status).to.equal('incomplete')
    expect(done.usage?.output_tokens).to.equal(4)
    expect((await client.responses.cancel(finished.id)).status).to.equal('incomplete')

    const long = await client.responses.create({background: true, input: 'Write at length.', max_output_tokens: 1900, model: MODEL})
    const cancelled = await client.responses.cancel(long.id)
    expect(cancelled.status).to.equal('cancelled')
    expect((await client.responses.retrieve(long.id)).status).to.equal('cancelled')
    const foreground = await client.responses.create({input: 'Hi', max_output_tokens: 2, model: MODEL})
    expect(await refusal(client.responses.cancel(foreground.id))).to.include({status: 400})
  })

  it('bounds every field before any work, naming it', async () => {
    const nested = (levels: number) => JSON.parse('{"type":"object","properties":{"a":'.repeat(levels) + '{"type":"string"}' + '}}'.repeat(levels)) as Record<string, unknown>
    const call = {arguments: '{"a":'.repeat(1500) + '1' + '}'.repeat(1500), call_id: 'c1', name: 'get_weather', type: 'function_call'}
    const cases: Array<[Record<string, unknown>, string]> = [
      [{input: [call], model: MODEL}, 'input[0].arguments'],
      [{input: 'x', model: MODEL, tools: [{...WEATHER, parameters: nested(1500)}]}, 'tools[0].parameters'],
      [{input: 'x', model: MODEL, text: {format: {name: 'x', schema: nested(1500), type: 'json_schema'}}}, 'text.format.schema'],
      [{input: Array.from({length: 2049}, () => ({content: 'x', role: 'user'})), model: MODEL}, 'input'],
      [{input: [{content: [{image_url: 'x', type: 'input_image'}], role: 'user'}], model: MODEL}, 'input[0].content[0].type'],
      [{input: [{call_id: 'nope', output: 'x', type: 'function_call_output'}], model: MODEL}, 'input[0].call_id'],
      [{input: 'x', max_output_tokens: 0, model: MODEL}, 'max_output_tokens'],
      [{input: 'x', metadata: Object.fromEntries(Array.from({length: 17}, (_, index) => [`k${index}`, 'v'])), model: MODEL}, 'metadata'],
      [{input: 'x', model: MODEL, tools: Array.from({length: 129}, () => WEATHER)}, 'tools'],
      [{input: 'x', model: MODEL, tools: [{...WEATHER, name: 'bad name'}]}, 'tools[0].name'],
      [{input: 'x', model: MODEL, text: {format: {name: 'x', type: 'json_schema'}}}, 'text.format.schema'],
      [{input: 'x', model: MODEL, tool_choice: 'required'}, 'tool_choice'],
      [{input: 'x', model: MODEL, temperature: 3}, 'temperature'],
      [{input: 'x', model: MODEL, previous_response_id: 'x'.repeat(129)}, 'previous_response_id'],
      [{background: true, input: 'x', model: MODEL, store: false}, 'background'],
      [{model: MODEL}, 'input'],
      [{input: 'x'.repeat(9 * 1024 * 1024), model: MODEL}, 'input'],
      [{background: true, input: 'x', model: MODEL, stream: true}, 'stream'],
    ]
    for (const [body, param] of cases) {
      const answer = await callApi(service, 'POST', '/v1/responses', body)
      expect(answer.status, JSON.stringify(answer.body)).to.equal(400)
      expect(answer.body.error.param, JSON.stringify(answer.body)).to.equal(param)
    }

    const items = await callApi(service, 'GET', '/v1/responses/resp_x/input_items?limit=101')
    expect(items.status).to.equal(400)
    // The model took none of it: it still answers.
    expect((await client.responses.create({input: 'Hi', max_output_tokens: 2, model: MODEL, store: false})).usage?.output_tokens).to.equal(2)
  })

  it('runs the documentation\'s example as written', async () => {
    const example = (await readmeBlock('responses-api', 'docs/responses-api.md')).replaceAll('http://127.0.0.1:9997', service.url).replaceAll('my-model', MODEL)
    const result = await execa('node', ['--input-type=module', '-e', example], {cwd: ROOT, reject: false})
    expect(result.exitCode, result.stderr).to.equal(0)
    const [first, second] = result.stdout.split('\n')
    expect(first).to.match(/^resp_\S+ \S/)
    expect(second).to.match(/^continued: resp_\S+/)
  })
})

describe('OpenAI Responses API under access control', function () {
  let service: RunningService
  const clientOf = (username: string) => new OpenAI({apiKey: apiKeyOf(username), baseURL: `${service.url}/v1`, maxRetries: 0})

  before(async function () {
    const directory = await temporaryDirectory()
    service = await startService({args: ['--auth-config', await writeTestAuthConfig(directory)]})
    await launch(service, directory, MODEL, {headers: {authorization: `Bearer ${apiKeyOf('root')}`}})
  })

  after(async () => service?.stop())

  it('shows a stored response only to the user who made it (and admins); to others it does not exist', async () => {
    const owner = clientOf('only-models:read')
    const other = clientOf('all-but-models:list')
    const response = await owner.responses.create({input: 'Hello', max_output_tokens: 2, model: MODEL})
    expect((await owner.responses.retrieve(response.id)).id).to.equal(response.id)
    expect((await clientOf('root').responses.retrieve(response.id)).id).to.equal(response.id)
    for (const call of [other.responses.retrieve(response.id), other.responses.delete(response.id), other.responses.cancel(response.id), other.responses.inputItems.list(response.id)])
      expect((await refusal(call)).status).to.equal(404)
    expect(await refusal(other.responses.create({input: 'Hi', model: MODEL, previous_response_id: response.id}))).to.include({param: 'previous_response_id', status: 404})
    expect((await refusal(clientOf('only-models:list').responses.retrieve(response.id))).status).to.equal(403)
    expect((await owner.responses.retrieve(response.id)).id).to.equal(response.id)
  })
})

describe('OpenAI Responses API across a restart', function () {
  it('keeps stored responses, and answers a background one the stopped service left running as failed, never in progress', async () => {
    const home = await temporaryDirectory()
    const first = await startService({home})
    let kept: string
    let left: string
    try {
      await launch(first, home, MODEL)
      const client = new OpenAI({apiKey: 'any', baseURL: `${first.url}/v1`, maxRetries: 0})
      kept = (await client.responses.create({input: 'Hi', max_output_tokens: 2, model: MODEL})).id
      left = (await client.responses.create({background: true, input: 'Write at length.', max_output_tokens: 1900, model: MODEL})).id
    } finally {
      await first.stop()
    }

    const second = await startService({home})
    try {
      const client = new OpenAI({apiKey: 'any', baseURL: `${second.url}/v1`, maxRetries: 0})
      expect((await client.responses.retrieve(kept)).output_text).to.be.a('string').and.not.equal('')
      const after = await client.responses.retrieve(left)
      expect(after.status, JSON.stringify(after.error)).to.equal('failed')
    } finally {
      await second.stop()
      await rm(home, {force: true, recursive: true})
    }
  })
})
