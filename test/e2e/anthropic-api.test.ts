/**
 * The Anthropic Messages API of a real `service-local` under /anthropic, driven with the official
 * `@anthropic-ai/sdk` client on generated GGUF models; every response and stream is checked against the SDK's own
 * types and the event order Anthropic documents.
 */
import Anthropic from '@anthropic-ai/sdk'
import {Ajv2020} from 'ajv/dist/2020.js'
import {expect} from 'chai'
import {join} from 'node:path'
import ts from 'typescript'

import {assertAnthropicMessage, assertAnthropicModel, assertAnthropicStream} from '../helpers/anthropic-shapes.js'
import {writeTinyChatModel} from '../helpers/models.js'
import {callApi, ROOT, type RunningService, startService, temporaryDirectory} from '../helpers/service.js'

/** The whole prompt of a usage: what the engine evaluated and what it took from its cache, as count_tokens counts it. */
const wholePrompt = (usage: Anthropic.Usage) => usage.input_tokens + (usage.cache_read_input_tokens ?? 0)

const MODEL = 'tiny-chat'
/** Ends its turns by itself after a few tokens, for `end_turn`. */
const ENDER = 'tiny-ender'

const WEATHER_TOOL = {
  description: 'Current weather in a city',
  input_schema: {
    properties: {city: {maxLength: 12, type: 'string'}, unit: {enum: ['celsius', 'fahrenheit']}},
    required: ['city', 'unit'],
    type: 'object' as const,
  },
  name: 'get_weather',
}

/** Raw SSE of a request, as [event name, parsed data] pairs. */
async function rawEvents(service: RunningService, body: unknown): Promise<Array<[string, {type: string}]>> {
  const response = await fetch(`${service.url}/anthropic/v1/messages`, {
    body: JSON.stringify(body),
    headers: {'anthropic-version': '2023-06-01', 'content-type': 'application/json', 'x-api-key': 'any'},
    method: 'POST',
  })
  expect(response.headers.get('content-type')).to.contain('text/event-stream')
  return (await response.text())
    .trim()
    .split('\n\n')
    .map((block) => {
      const [, event] = /^event: (.*)$/m.exec(block)!
      const [, data] = /^data: (.*)$/m.exec(block)!
      return [event, JSON.parse(data)]
    })
}

describe('Anthropic Messages API (service-local, @anthropic-ai/sdk)', function () {
  let service: RunningService
  let client: Anthropic

  before(async function () {
    const directory = await temporaryDirectory()
    service = await startService()
    client = new Anthropic({apiKey: 'any-key-is-ignored', baseURL: `${service.url}/anthropic`, maxRetries: 0})
    for (const [name, options] of [[MODEL, {}], [ENDER, {endOfTurnLogit: 6}]] as const) {
      const {family} = await writeTinyChatModel(directory, name, options)
      expect((await callApi(service, 'POST', '/v1/model_registrations/LLM', {model: family, persist: false})).status).to.equal(200)
      const launched = await callApi(service, 'POST', '/v1/models', {model_engine: 'llama.cpp', model_name: name, n_ctx: 2048, n_parallel: 2, n_threads: 1})
      expect(launched.status).to.equal(200)
    }
  })

  after(async () => service?.stop())

  it('checks responses against shapes that type-check as the SDK\'s own types', () => {
    const file = join(ROOT, 'test/helpers/anthropic-shapes.ts')
    const program = ts.createProgram([file], {module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, noEmit: true, skipLibCheck: true, strict: true, target: ts.ScriptTarget.ES2023})
    const problems = ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'))
    expect(problems).to.deep.equal([])
  })

  describe('messages', () => {
    it('answers in the SDK\'s Message shape, with max_tokens, a system prompt and real token counts', async () => {
      const request = {max_tokens: 12, messages: [{content: 'Say something.', role: 'user' as const}], model: MODEL, system: 'You are terse.', temperature: 0}
      const message = await client.messages.create(request)
      assertAnthropicMessage(message)
      expect(message.id).to.match(/^msg_/)
      expect(message.model).to.equal(MODEL)
      expect(message.stop_reason).to.equal('max_tokens')
      expect(message.stop_sequence).to.equal(null)
      expect(message.content).to.have.length(1)
      expect(message.content[0]).to.include({type: 'text'})
      expect(message.usage.output_tokens).to.equal(12)
      const counted = await client.messages.countTokens({messages: request.messages, model: MODEL, system: request.system})
      expect(counted).to.deep.equal({input_tokens: wholePrompt(message.usage)})
    })

    it('takes the system prompt as a string or as text blocks (a line each), and multi-turn conversations', async () => {
      const turns = [
        {content: 'Hello', role: 'user' as const},
        {content: [{text: 'Hi there.', type: 'text' as const}], role: 'assistant' as const},
        {content: [{text: 'How are', type: 'text' as const}, {text: 'you?', type: 'text' as const}], role: 'user' as const},
      ]
      const asString = await client.messages.create({max_tokens: 6, messages: turns, model: MODEL, system: 'Be kind.\nBe brief.', temperature: 0})
      const asBlocks = await client.messages.create({
        max_tokens: 6,
        messages: turns,
        model: MODEL,
        system: [{text: 'Be kind.', type: 'text'}, {text: 'Be brief.', type: 'text'}],
        temperature: 0,
      })
      expect(asBlocks.content).to.deep.equal(asString.content)
      expect(asBlocks.usage).to.deep.equal({...asString.usage, cache_read_input_tokens: wholePrompt(asString.usage) - 1, input_tokens: 1})
      const single = await client.messages.create({max_tokens: 6, messages: [turns[0]], model: MODEL, system: 'Be kind.\nBe brief.', temperature: 0})
      expect(wholePrompt(asString.usage)).to.be.greaterThan(wholePrompt(single.usage))
    })

    it('continues a final assistant turn (a prefill) instead of answering after it, and counts it so', async () => {
      const ask = {content: 'Hello!', role: 'user' as const}
      const prefill = 'Sure:'
      const prefilled = [ask, {content: prefill, role: 'assistant' as const}]
      // With tools the reply goes through node-llama-cpp's LlamaChat, without through the engine's plain path.
      for (const tools of [[], [WEATHER_TOOL]]) {
        const asked = await client.messages.countTokens({messages: [ask], model: MODEL, tools})
        const counted = await client.messages.countTokens({messages: prefilled, model: MODEL, tools})
        // The prefill's own tokens (at most one a character), and no end of turn or new assistant header after them.
        expect(counted.input_tokens - asked.input_tokens, `tools: ${tools.length}`).to.be.within(1, prefill.length)
        const message = await client.messages.create({max_tokens: 6, messages: prefilled, model: MODEL, temperature: 0, tools})
        assertAnthropicMessage(message)
        expect(message.stop_reason).to.equal('max_tokens')
        expect(wholePrompt(message.usage)).to.equal(counted.input_tokens)
      }

      // The same continuation as OpenAI's route gives when asked for it (vLLM's continue_final_message).
      const continued = await client.messages.create({max_tokens: 6, messages: prefilled, model: MODEL, temperature: 0})
      const openai = await callApi(service, 'POST', '/v1/chat/completions', {add_generation_prompt: false, continue_final_message: true, max_tokens: 6, messages: prefilled, model: MODEL, temperature: 0})
      expect(openai.body.choices[0].message.content).to.equal((continued.content[0] as Anthropic.TextBlock).text)
      expect(openai.body.usage.prompt_tokens).to.equal(wholePrompt(continued.usage))
    })

    it('says end_turn when the model ends its turn, and stop_sequence with the sequence that stopped it', async () => {
      const ended = await client.messages.create({max_tokens: 100, messages: [{content: 'Hello', role: 'user'}], model: ENDER, temperature: 0})
      assertAnthropicMessage(ended)
      expect(ended.stop_reason).to.equal('end_turn')
      expect(ended.usage.output_tokens).to.be.lessThan(100)

      const request = {max_tokens: 20, messages: [{content: 'Hello', role: 'user' as const}], model: MODEL, temperature: 0}
      const greedy = ((await client.messages.create(request)).content[0] as Anthropic.TextBlock).text
      const stopAt = greedy.trim().split(/\s+/)[1]
      const stopped = await client.messages.create({...request, stop_sequences: ['never-generated', stopAt]})
      expect(stopped.stop_reason).to.equal('stop_sequence')
      expect(stopped.stop_sequence).to.equal(stopAt)
      expect((stopped.content[0] as Anthropic.TextBlock).text).to.equal(greedy.slice(0, greedy.indexOf(stopAt)))
    })

    it('accepts top_k, top_p, metadata and the anthropic-version header', async () => {
      const response = await fetch(`${service.url}/anthropic/v1/messages`, {
        body: JSON.stringify({max_tokens: 3, messages: [{content: 'hi', role: 'user'}], metadata: {user_id: 'u1'}, model: MODEL, top_k: 20, top_p: 0.9}),
        headers: {'anthropic-version': '2023-06-01', 'content-type': 'application/json', 'x-api-key': 'any'},
        method: 'POST',
      })
      expect(response.status).to.equal(200)
      assertAnthropicMessage(await response.json())
    })
  })

  describe('streaming', () => {
    it('sends named events in the documented order, concatenating to the non-streamed answer', async () => {
      const request = {max_tokens: 16, messages: [{content: 'Tell me a story.', role: 'user' as const}], model: MODEL, temperature: 0}
      const whole = await client.messages.create(request)
      const events = await rawEvents(service, {...request, stream: true})
      for (const [name, data] of events) expect(data.type).to.equal(name)
      expect(events[1][0]).to.equal('ping')
      const stream = events.map(([, data]) => data).filter((data) => data.type !== 'ping')
      assertAnthropicStream(stream)
      const start = stream[0] as Anthropic.RawMessageStartEvent
      expect(start.message.content).to.deep.equal([])
      expect(start.message.usage.input_tokens).to.equal(wholePrompt(whole.usage)).and.be.greaterThan(0)
      const text = stream
        .filter((event): event is Anthropic.RawContentBlockDeltaEvent => event.type === 'content_block_delta')
        .map((event) => (event.delta as Anthropic.TextDelta).text)
        .join('')
      expect(text).to.equal((whole.content[0] as Anthropic.TextBlock).text)
      const delta = stream.at(-2) as Anthropic.RawMessageDeltaEvent
      expect(delta.delta.stop_reason).to.equal('max_tokens')
      expect(delta.usage.output_tokens).to.equal(16)
    })

    it("rebuilds the same message with the SDK's stream helper", async () => {
      const request = {max_tokens: 8, messages: [{content: 'Hello', role: 'user' as const}], model: ENDER, temperature: 0}
      const whole = await client.messages.create(request)
      const final = await client.messages.stream(request).finalMessage()
      expect(final.content).to.deep.equal(whole.content)
      expect(final.stop_reason).to.equal(whole.stop_reason)
      expect(final.usage.output_tokens).to.equal(whole.usage.output_tokens)
    })
  })

  describe('tools', () => {
    const validInput = new Ajv2020().compile(WEATHER_TOOL.input_schema)

    it('calls a tool when tool_choice is "any": stop_reason tool_use, a tool_use block whose input fits the schema', async () => {
      const message = await client.messages.create({
        max_tokens: 300,
        messages: [{content: 'What is the weather in Paris?', role: 'user'}],
        model: MODEL,
        temperature: 0,
        tool_choice: {type: 'any'},
        tools: [WEATHER_TOOL],
      })
      assertAnthropicMessage(message)
      expect(message.stop_reason).to.equal('tool_use')
      const [use] = message.content as Anthropic.ToolUseBlock[]
      expect(use).to.include({name: 'get_weather', type: 'tool_use'})
      expect(use.id).to.match(/^toolu_/)
      expect(validInput(use.input), JSON.stringify(use.input)).to.equal(true)
    })

    it('streams a named tool call as input_json_delta events that join into its input', async () => {
      const request = {
        max_tokens: 300,
        messages: [{content: 'Weather?', role: 'user' as const}],
        model: MODEL,
        temperature: 0,
        tool_choice: {name: 'get_weather', type: 'tool' as const},
        tools: [{input_schema: {properties: {}, type: 'object' as const}, name: 'noop'}, WEATHER_TOOL],
      }
      const whole = await client.messages.create(request)
      const stream = (await rawEvents(service, {...request, stream: true})).map(([, data]) => data).filter((data) => data.type !== 'ping')
      assertAnthropicStream(stream)
      const start = stream.find((event) => event.type === 'content_block_start') as Anthropic.RawContentBlockStartEvent
      expect(start.content_block).to.include({input: start.content_block.type === 'tool_use' && start.content_block.input, name: 'get_weather', type: 'tool_use'})
      const json = stream
        .filter((event): event is Anthropic.RawContentBlockDeltaEvent => event.type === 'content_block_delta')
        .map((event) => (event.delta as Anthropic.InputJSONDelta).partial_json)
        .join('')
      expect(JSON.parse(json)).to.deep.equal((whole.content[0] as Anthropic.ToolUseBlock).input)
      expect((stream.at(-2) as Anthropic.RawMessageDeltaEvent).delta.stop_reason).to.equal('tool_use')
      const final = await client.messages.stream(request).finalMessage()
      expect((final.content[0] as Anthropic.ToolUseBlock).input).to.deep.equal((whole.content[0] as Anthropic.ToolUseBlock).input)
    })

    it('continues after a tool_result, and counts the tools in count_tokens', async () => {
      const ask = {content: 'What is the weather in Paris?', role: 'user' as const}
      const call = await client.messages.create({max_tokens: 300, messages: [ask], model: MODEL, tool_choice: {type: 'any'}, tools: [WEATHER_TOOL]})
      const use = call.content[0] as Anthropic.ToolUseBlock
      const messages: Anthropic.MessageParam[] = [
        ask,
        {content: call.content, role: 'assistant'},
        {content: [{content: '18 degrees and sunny', tool_use_id: use.id, type: 'tool_result'}, {text: 'Thanks!', type: 'text'}], role: 'user'},
      ]
      const answer = await client.messages.create({max_tokens: 5, messages, model: MODEL, tools: [WEATHER_TOOL]})
      assertAnthropicMessage(answer)
      expect(answer.stop_reason).to.equal('max_tokens')
      expect(answer.content[0].type).to.equal('text')
      const withTools = await client.messages.countTokens({messages, model: MODEL, tools: [WEATHER_TOOL]})
      const without = await client.messages.countTokens({messages: [ask], model: MODEL})
      expect(withTools.input_tokens).to.equal(wholePrompt(answer.usage)).and.be.greaterThan(without.input_tokens)
    })

    it('refuses tool blocks that do not fit together, naming the field', async () => {
      const cases: Array<[Anthropic.MessageParam[], string, RegExp]> = [
        [[{content: [{content: 'x', tool_use_id: 'toolu_missing', type: 'tool_result'}], role: 'user'}], 'messages[0].content[0].tool_use_id', /matches no tool_use block/],
        [[{content: [{id: '', input: {}, name: 'get_weather', type: 'tool_use'}], role: 'assistant'}], 'messages[0].content[0].id', /is required in a tool_use block/],
      ]
      for (const [messages, param, message] of cases) {
        const response = await callApi(service, 'POST', '/anthropic/v1/messages', {max_tokens: 5, messages, model: MODEL})
        expect(response.status).to.equal(400)
        expect(response.body.type).to.equal('error')
        expect(response.body.error.type).to.equal('invalid_request_error')
        expect(response.body.error.message).to.contain(param).and.match(message)
      }
    })
  })

  describe('models and errors', () => {
    it('reports a model crash mid-stream as an error event, which the SDK raises', async () => {
      const {family} = await writeTinyChatModel(await temporaryDirectory(), 'doomed')
      expect((await callApi(service, 'POST', '/v1/model_registrations/LLM', {model: family, persist: false})).status).to.equal(200)
      expect((await callApi(service, 'POST', '/v1/models', {model_engine: 'llama.cpp', model_name: 'doomed', n_threads: 1})).status).to.equal(200)
      const {pid} = (await callApi(service, 'GET', '/v1/models/doomed')).body
      const stream = client.messages.stream({max_tokens: 1500, messages: [{content: 'Go on forever.', role: 'user'}], model: 'doomed'})
      const failure = await (async () => {
        try {
          for await (const event of stream) if (event.type === 'content_block_delta') process.kill(pid, 'SIGKILL')
        } catch (error) {
          return error as InstanceType<typeof Anthropic.APIError>
        }
      })()
      expect(failure).to.be.instanceOf(Anthropic.APIError)
      expect(failure!.error).to.deep.include({type: 'error'})
      expect((failure!.error as {error: {type: string; message: string}}).error.message).to.match(/killed by SIGKILL/)
      expect((await callApi(service, 'DELETE', '/v1/models/doomed')).status).to.equal(200)
    })

    it("gives the SDK the request's id in request-id: its _request_id, withResponse's request_id and an error's requestID", async () => {
      const message = await client.messages.create({max_tokens: 2, messages: [{content: 'hi', role: 'user'}], model: MODEL})
      expect(message._request_id).to.match(/^[0-9a-f-]{36}$/)
      const tagged = await client.messages.create({max_tokens: 2, messages: [{content: 'hi', role: 'user'}], model: MODEL}, {headers: {'X-Request-Id': 'trace-42'}}).withResponse()
      expect(tagged.request_id).to.equal('trace-42')
      expect(tagged.response.headers.get('x-request-id')).to.equal('trace-42')
      const refused = await client.messages.create({max_tokens: 2, messages: [{content: 'hi', role: 'user'}], model: MODEL, stop_sequences: ['']}).catch((error) => error)
      expect(refused).to.be.instanceOf(Anthropic.BadRequestError)
      expect(refused.requestID).to.match(/^[0-9a-f-]{36}$/)
      const counted = await client.messages.countTokens({messages: [{content: 'hi', role: 'user'}], model: MODEL})
      expect(counted._request_id).to.match(/^[0-9a-f-]{36}$/)
    })

    it('lists and describes running chat models in the SDK\'s ModelInfo shape', async () => {
      const listed = []
      for await (const model of client.models.list()) listed.push(model)
      expect(listed.map((model) => model.id)).to.deep.equal([MODEL, ENDER].sort())
      for (const model of listed) assertAnthropicModel(model)
      const one = await client.models.retrieve(MODEL)
      expect(one).to.include({display_name: MODEL, id: MODEL, max_input_tokens: 2048, type: 'model'})
      const missing = await client.models.retrieve('nope').catch((error) => error)
      expect(missing).to.be.instanceOf(Anthropic.NotFoundError)
    })

    it("answers errors in Anthropic's shape, which the SDK raises as its own error classes", async () => {
      const missingModel = await client.messages.create({max_tokens: 5, messages: [{content: 'hi', role: 'user'}], model: 'nope'}).catch((error) => error)
      expect(missingModel).to.be.instanceOf(Anthropic.NotFoundError)
      expect(missingModel.error).to.deep.equal({error: {message: 'model "nope" is not running. Running models: tiny-chat, tiny-ender.', type: 'not_found_error'}, type: 'error'})
      const cases: Array<[Record<string, unknown>, RegExp]> = [
        [{messages: [{content: 'hi', role: 'user'}], model: MODEL}, /`max_tokens` is required/],
        [{max_tokens: 5, model: MODEL}, /`messages` is required/],
        [{max_tokens: 5, messages: [{content: 'hi', role: 'user'}]}, /`model` is required/],
        [{max_tokens: 5, messages: [{content: 'hi', role: 'user'}], model: MODEL, temperature: 1.5}, /temperature.*between 0 and 1/],
        [{max_tokens: 5, messages: [{content: [{source: {data: 'x', media_type: 'image/png', type: 'base64'}, type: 'image'}], role: 'user'}], model: MODEL}, /model tiny-chat \(.*\) cannot see images: it has no vision ability/],
        [{max_tokens: 5, messages: [{content: [{source: {data: 'x', media_type: 'application/pdf', type: 'base64'}, type: 'document'}], role: 'user'}], model: MODEL}, /document blocks are not supported/],
        [{max_tokens: 5, messages: [{content: 'hi', role: 'user'}], model: MODEL, tool_choice: {name: 'nope', type: 'tool'}, tools: [WEATHER_TOOL]}, /"nope" is not one of the tools/],
        [{max_tokens: 5, messages: [{content: 'hi', role: 'user'}], model: MODEL, thinking: {budget_tokens: 1024, type: 'enabled'}}, /`thinking.budget_tokens` must be less than `max_tokens`/],
      ]
      for (const [body, message] of cases) {
        const response = await callApi(service, 'POST', '/anthropic/v1/messages', body)
        expect(response.status, JSON.stringify(body)).to.equal(400)
        expect(response.body).to.have.keys('error', 'type')
        expect(response.body.error.type).to.equal('invalid_request_error')
        expect(response.body.error.message).to.match(message)
      }

      const unsupported = await client.messages
        .create({max_tokens: 5, messages: [{content: 'hi', role: 'user'}], model: MODEL, tool_choice: {type: 'any'}, tools: [{input_schema: {properties: {n: {minimum: 3, type: 'integer'}}, type: 'object'}, name: 'count'}]})
        .catch((error) => error)
      expect(unsupported).to.be.instanceOf(Anthropic.BadRequestError)
      expect(unsupported.message).to.contain('tools[0].input_schema.properties.n.minimum').and.contain('not supported')
    })
  })
})
