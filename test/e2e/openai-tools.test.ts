/**
 * Tools and structured output on the OpenAI chat API of a real `service-local`, through the official `openai`
 * client. A random-weight model never calls a tool or writes JSON by itself, so these tests lean on what the engine
 * enforces with a grammar: `tool_choice` "required" or a named function always yields a call whose arguments fit the
 * function's schema, and `response_format` always yields JSON (matching the schema, if one is given).
 */
import {Ajv2020} from 'ajv/dist/2020.js'
import {expect} from 'chai'
import OpenAI from 'openai'

import {assertOpenAiSchema} from '../helpers/conformance.js'
import {writeTinyChatModel} from '../helpers/models.js'
import {callApi, type RunningService, startService, temporaryDirectory} from '../helpers/service.js'

const MODEL = 'tiny-chat'
const ajv = new Ajv2020({strict: false})

const WEATHER = {
  function: {
    description: 'Current weather in a city',
    name: 'get_weather',
    parameters: {
      additionalProperties: false,
      properties: {city: {maxLength: 12, type: 'string'}, days: {items: {enum: ['today', 'tomorrow']}, maxItems: 2, type: 'array'}, metric: {type: 'boolean'}},
      required: ['city', 'days', 'metric'],
      type: 'object',
    },
  },
  type: 'function' as const,
}
const TIME = {function: {description: 'The current time', name: 'get_time', parameters: {properties: {zone: {enum: ['UTC', 'CET']}}, type: 'object'}}, type: 'function' as const}

/** Nested objects, enums, booleans, bounded strings and arrays, nullable fields and a $ref: all the grammar enforces. */
const PERSON_SCHEMA = {
  $defs: {pet: {properties: {kind: {enum: ['cat', 'dog']}, name: {maxLength: 8, type: 'string'}}, required: ['kind', 'name'], type: 'object'}},
  additionalProperties: false,
  properties: {
    active: {type: 'boolean'},
    name: {maxLength: 10, minLength: 1, type: 'string'},
    nickname: {anyOf: [{maxLength: 6, type: 'string'}, {type: 'null'}]},
    pets: {items: {$ref: '#/$defs/pet'}, maxItems: 2, type: 'array'},
    role: {enum: ['admin', 'user', 'guest']},
  },
  required: ['name', 'role', 'active', 'pets', 'nickname'],
  title: 'Person',
  type: 'object',
}

describe('OpenAI tools and structured output (service-local, openai client)', function () {
  let service: RunningService
  let client: OpenAI
  const ask = [{content: 'What is the weather in Paris?', role: 'user' as const}]

  before(async function () {
    const {family} = await writeTinyChatModel(await temporaryDirectory(), MODEL)
    service = await startService()
    client = new OpenAI({apiKey: 'any-key-is-ignored', baseURL: `${service.url}/v1`, maxRetries: 0})
    expect((await callApi(service, 'POST', '/v1/model_registrations/LLM', {model: family, persist: false})).status).to.equal(200)
    const launched = await callApi(service, 'POST', '/v1/models', {model_engine: 'llama.cpp', model_name: MODEL, n_ctx: 2048, n_parallel: 2, n_threads: 1})
    expect(launched.status).to.equal(200)
  })

  after(async () => service?.stop())

  describe('tools', () => {
    it('calls a tool when tool_choice is "required": finish_reason tool_calls, no content, arguments that fit the schema', async () => {
      const completion = await client.chat.completions.create({max_tokens: 400, messages: ask, model: MODEL, temperature: 0, tool_choice: 'required', tools: [WEATHER, TIME]})
      assertOpenAiSchema('CreateChatCompletionResponse', completion)
      const [choice] = completion.choices
      expect(choice.finish_reason).to.equal('tool_calls')
      expect(choice.message.content).to.equal(null)
      expect(choice.message.tool_calls).to.have.length(1)
      const call = choice.message.tool_calls![0] as OpenAI.ChatCompletionMessageFunctionToolCall
      expect(call.id).to.match(/^call_/)
      expect(call.type).to.equal('function')
      const tool = [WEATHER, TIME].find((candidate) => candidate.function.name === call.function.name)!
      expect(tool, call.function.name).to.not.equal(undefined)
      expect(ajv.validate(tool.function.parameters, JSON.parse(call.function.arguments)), call.function.arguments).to.equal(true)
    })

    it('streams a named tool call as deltas: id, type and name first, then arguments that join into valid JSON', async () => {
      const request = {max_tokens: 400, messages: ask, model: MODEL, temperature: 0, tool_choice: {function: {name: 'get_weather'}, type: 'function' as const}, tools: [TIME, WEATHER]}
      const whole = await client.chat.completions.create(request)
      const chunks = []
      for await (const chunk of await client.chat.completions.create({...request, stream: true})) chunks.push(chunk)
      for (const chunk of chunks) assertOpenAiSchema('CreateChatCompletionStreamResponse', chunk)
      const deltas = chunks.flatMap((chunk) => chunk.choices[0]?.delta.tool_calls ?? [])
      expect(deltas[0]).to.include({index: 0, type: 'function'})
      expect(deltas[0].id).to.match(/^call_/)
      expect(deltas[0].function).to.deep.equal({arguments: '', name: 'get_weather'})
      expect(deltas.slice(1).every((delta) => delta.id === undefined && delta.function?.name === undefined && delta.index === 0)).to.equal(true)
      const streamed = deltas.map((delta) => delta.function?.arguments ?? '').join('')
      const wholeCall = whole.choices[0].message.tool_calls![0] as OpenAI.ChatCompletionMessageFunctionToolCall
      expect(streamed).to.equal(wholeCall.function.arguments)
      expect(ajv.validate(WEATHER.function.parameters, JSON.parse(streamed))).to.equal(true)
      expect(chunks.filter((chunk) => chunk.choices[0]?.finish_reason).map((chunk) => chunk.choices[0].finish_reason)).to.deep.equal(['tool_calls'])

      const final = await client.chat.completions.stream(request).finalChatCompletion()
      const finalCall = final.choices[0].message.tool_calls![0] as OpenAI.ChatCompletionMessageFunctionToolCall
      expect(finalCall.function).to.deep.include({arguments: wholeCall.function.arguments, name: 'get_weather'})
    })

    it('answers with text when tool_choice is "auto" or "none" and the model does not call', async () => {
      for (const toolChoice of ['auto', 'none'] as const) {
        const completion = await client.chat.completions.create({max_tokens: 6, messages: ask, model: MODEL, tool_choice: toolChoice, tools: [WEATHER]})
        assertOpenAiSchema('CreateChatCompletionResponse', completion)
        expect(completion.choices[0].finish_reason).to.equal('length')
        expect(completion.choices[0].message.content).to.be.a('string').and.not.equal('')
        expect(completion.choices[0].message.tool_calls).to.equal(undefined)
      }
    })

    it('continues a conversation after a tool result given with tool_call_id', async () => {
      const call = await client.chat.completions.create({max_tokens: 400, messages: ask, model: MODEL, tool_choice: 'required', tools: [WEATHER]})
      const {message} = call.choices[0]
      const messages: OpenAI.ChatCompletionMessageParam[] = [
        ...ask,
        message,
        {content: JSON.stringify({celsius: 18, sky: 'sunny'}), role: 'tool', tool_call_id: message.tool_calls![0].id},
      ]
      const answer = await client.chat.completions.create({max_tokens: 5, messages, model: MODEL, tools: [WEATHER]})
      assertOpenAiSchema('CreateChatCompletionResponse', answer)
      expect(answer.choices[0].finish_reason).to.equal('length')
      expect(answer.choices[0].message.content).to.be.a('string').and.not.equal('')
      expect(answer.usage!.prompt_tokens).to.be.greaterThan(call.usage!.prompt_tokens)
    })

    it('refuses tool requests that do not fit together, naming the field', async () => {
      const cases: Array<[Record<string, unknown>, string, RegExp]> = [
        [{tool_choice: {function: {name: 'nope'}, type: 'function'}, tools: [WEATHER]}, 'tool_choice', /"nope", which is not in `tools` \(get_weather\)/],
        [{tool_choice: 'required'}, 'tool_choice', /has no `tools`/],
        [{messages: [...ask, {content: 'x', role: 'tool', tool_call_id: 'call_nope'}]}, 'messages[1].tool_call_id', /matches no tool call/],
        [{messages: [...ask, {content: 'x', role: 'tool'}]}, 'messages[1].tool_call_id', /is required/],
        [{tools: [{function: {name: 'bad name!'}, type: 'function'}]}, 'tools[0].function.name', /matching/],
        [
          {tool_choice: 'required', tools: [{function: {name: 'pick', parameters: {properties: {code: {pattern: '^[A-Z]+$', type: 'string'}}, type: 'object'}}, type: 'function'}]},
          'tools[0].function.parameters.properties.code.pattern',
          /is not supported: the llama.cpp engine enforces JSON Schema with a grammar/,
        ],
        [{response_format: {type: 'json_object'}, tool_choice: 'required', tools: [WEATHER]}, 'response_format', /cannot be combined with tools/],
      ]
      for (const [extra, param, message] of cases) {
        const response = await callApi(service, 'POST', '/v1/chat/completions', {max_tokens: 5, messages: ask, model: MODEL, ...extra})
        expect(response.status, JSON.stringify(extra)).to.equal(400)
        assertOpenAiSchema('ErrorResponse', response.body)
        expect(response.body.error.param).to.equal(param)
        expect(response.body.error.message).to.match(message)
      }
    })
  })

  describe('response_format', () => {
    it('makes json_schema answers parse and match the schema, streamed or not', async () => {
      const request = {
        max_tokens: 400,
        messages: [{content: 'Describe a person.', role: 'user' as const}],
        model: MODEL,
        response_format: {json_schema: {name: 'person', schema: PERSON_SCHEMA, strict: true}, type: 'json_schema' as const},
        seed: 7,
      }
      const completion = await client.chat.completions.create(request)
      assertOpenAiSchema('CreateChatCompletionResponse', completion)
      expect(completion.choices[0].finish_reason).to.equal('stop')
      const person = JSON.parse(completion.choices[0].message.content!)
      expect(ajv.validate(PERSON_SCHEMA, person), JSON.stringify(ajv.errors)).to.equal(true)

      let streamed = ''
      for await (const chunk of await client.chat.completions.create({...request, stream: true})) streamed += chunk.choices[0]?.delta.content ?? ''
      expect(streamed).to.equal(completion.choices[0].message.content)
    })

    it('makes json_object answers parse as JSON', async () => {
      const completion = await client.chat.completions.create({max_tokens: 300, messages: [{content: 'Give me JSON.', role: 'user'}], model: MODEL, response_format: {type: 'json_object'}, seed: 1})
      expect(completion.choices[0].finish_reason).to.equal('stop')
      expect(() => JSON.parse(completion.choices[0].message.content!)).to.not.throw()
    })

    it('refuses a schema the grammar cannot enforce with 400 naming the keyword, before any stream starts', async () => {
      const cases: Array<[unknown, string, RegExp]> = [
        [{json_schema: {name: 'n', schema: {properties: {age: {minimum: 0, type: 'integer'}}, type: 'object'}}, type: 'json_schema'}, 'response_format.json_schema.schema.properties.age.minimum', /not supported/],
        [{json_schema: {name: 'n', schema: {properties: {mail: {format: 'email', type: 'string'}}, type: 'object'}}, type: 'json_schema'}, 'response_format.json_schema.schema.properties.mail.format', /"email" is not supported.*date, time and date-time/],
        [{json_schema: {name: 'n', schema: {$ref: 'https://example.com/schema.json'}}, type: 'json_schema'}, 'response_format.json_schema.schema.$ref', /must point into the schema's own \$defs/],
        [{json_schema: {name: 'n'}, type: 'json_schema'}, 'response_format.json_schema.schema', /is required/],
        [{type: 'json_schema'}, 'response_format.json_schema', /is required/],
        [{type: 'yaml'}, 'response_format.type', /one of text, json_object, json_schema/],
      ]
      for (const stream of [false, true]) {
        for (const [format, param, message] of cases) {
          const response = await callApi(service, 'POST', '/v1/chat/completions', {messages: ask, model: MODEL, response_format: format, stream})
          expect(response.status, JSON.stringify(format)).to.equal(400)
          expect(response.body.error.param).to.equal(param)
          expect(response.body.error.message).to.match(message)
        }
      }
    })
  })
})
