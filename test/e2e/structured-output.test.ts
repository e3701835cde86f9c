/**
 * Structured output holds for every sampled reply, not only for one lucky seed: hundreds of replies of a
 * random-weight model (temperature above 0, a seed each) to `response_format` json_schema requests and forced tool
 * calls are validated against their schemas, on a model that also serves the requests an earlier defect report ran
 * before them (Anthropic calls, a completion) on the same sequence.
 *
 * Each schema bounds its strings and arrays, so a reply's length is bounded too (numbers are: at most 16 digits, a
 * fraction of 16 and a two-digit exponent) and a budget above that bound must be enough: every reply ends with
 * "stop" (or a tool call). Numbers are checked as written, since JSON.parse reads `6E994` as Infinity and ajv takes
 * Infinity for an integer.
 */
import Anthropic from '@anthropic-ai/sdk'
import {Ajv2020} from 'ajv/dist/2020.js'
import {expect} from 'chai'
import OpenAI from 'openai'

import {RANDOM_LLAMA_TOKENS} from '../../plugins/engine-llama-cpp/src/gguf/random-llama.js'
import {serveTinyChatModel} from '../helpers/models.js'
import {callApi, type RunningService} from '../helpers/service.js'

const MODEL = 'tiny-chat'
const ajv = new Ajv2020({strict: false})
/** Properties the schemas below declare as integers: written as plain digits. */
const INTEGER_KEYS = new Set(['age', 'count', 'days', 'zip'])
const NUMBER = /^-?(0|[1-9]\d{0,15})(\.\d{1,16})?([eE][-+]?\d{1,2})?$/
const INTEGER = /^-?(0|[1-9]\d{0,15})$/

const SCHEMAS: Record<string, object> = {
  person: {additionalProperties: false, properties: {name: {maxLength: 12, type: 'string'}, age: {type: 'integer'}}, required: ['name', 'age'], type: 'object'},
  measures: {
    properties: {value: {type: 'number'}, ratios: {items: {type: 'number'}, maxItems: 3, type: 'array'}, count: {type: 'integer'}},
    required: ['value', 'ratios', 'count'],
    type: 'object',
  },
  nested: {
    properties: {
      owner: {
        properties: {name: {maxLength: 8, type: 'string'}, address: {properties: {city: {maxLength: 8, type: 'string'}, zip: {type: 'integer'}}, type: 'object'}},
        type: 'object',
      },
      tags: {items: {enum: ['red', 'green', 'blue']}, maxItems: 3, minItems: 1, type: 'array'},
    },
    type: 'object',
  },
  choices: {
    properties: {
      status: {enum: ['open', 'closed', 3, null]},
      note: {anyOf: [{maxLength: 6, type: 'string'}, {type: 'null'}]},
      done: {type: 'boolean'},
      pair: {maxItems: 2, minItems: 2, prefixItems: [{type: 'integer'}, {const: 'x'}], type: 'array'},
    },
    type: 'object',
  },
}

const TOOLS = [
  {function: {name: 'get_weather', parameters: {properties: {city: {maxLength: 12, type: 'string'}, days: {type: 'integer'}}, required: ['city', 'days'], type: 'object'}}, type: 'function' as const},
  {function: {name: 'convert', parameters: {properties: {amount: {type: 'number'}, unit: {enum: ['kg', 'lb']}}, required: ['amount', 'unit'], type: 'object'}}, type: 'function' as const},
]

/** Parses a reply and checks every number as written: finite, bounded, and plain digits where an integer is due. */
function parseStrictly(text: string): unknown {
  const numbers: Array<{key: string; source: string}> = []
  const value = JSON.parse(text, (key, parsed: unknown, context?: {source?: string}) => {
    if (typeof parsed === 'number') numbers.push({key, source: context!.source!})
    return parsed
  })
  for (const {key, source} of numbers) {
    expect(source, `${key} in ${text}`).to.match(INTEGER_KEYS.has(key) ? INTEGER : NUMBER)
    expect(Number.isFinite(Number(source)), `${key} in ${text}`).to.equal(true)
  }

  return value
}

function expectValid(schema: object, text: string) {
  const value = parseStrictly(text)
  expect(ajv.validate(schema, value), `${text}: ${JSON.stringify(ajv.errors)}`).to.equal(true)
}

describe('structured output of sampled replies (service-local, openai and @anthropic-ai/sdk clients)', function () {
  let service: RunningService
  let openai: OpenAI
  let anthropic: Anthropic
  const seeds = (count: number) => Array.from({length: count}, (_, index) => ({seed: 1000 + index * 7919, temperature: 0.6 + (index % 5) * 0.25}))

  before(async function () {
    // One sequence: every request leaves its state to the next.
    ;({anthropic, openai, service} = await serveTinyChatModel(MODEL, {n_ctx: 2048, n_parallel: 1, n_threads: 1}))
  })

  after(async () => service?.stop())

  /** The requests the defect report ran before its json_schema chat. */
  async function earlierRequests(seed: number) {
    await anthropic.messages.create({max_tokens: 12, messages: [{content: 'Hello there', role: 'user'}], model: MODEL, temperature: 1})
    const stream = anthropic.messages.stream({max_tokens: 12, messages: [{content: 'Say hi', role: 'user'}], model: MODEL, stop_sequences: ['the'], system: 'Be brief'})
    await stream.finalMessage()
    await openai.completions.create({max_tokens: 12, model: MODEL, prompt: 'Once upon a time', seed})
  }

  it('fits a string and an integer after Anthropic calls and a completion on the same sequence, every time', async () => {
    for (const {seed, temperature} of seeds(40)) {
      await earlierRequests(seed)
      const reply = await openai.chat.completions.create({
        max_tokens: 200,
        messages: [{content: 'Give me a person with a name and an age.', role: 'user'}],
        model: MODEL,
        response_format: {json_schema: {name: 'person', schema: SCHEMAS.person}, type: 'json_schema'},
        seed,
        temperature,
      })
      expect(reply.choices[0].finish_reason, reply.choices[0].message.content!).to.equal('stop')
      expectValid(SCHEMAS.person, reply.choices[0].message.content!)
    }
  })

  it('fits numbers, nested objects, arrays, enums and unions for every seed', async () => {
    for (const [name, schema] of Object.entries(SCHEMAS))
      for (const {seed, temperature} of seeds(40)) {
        const reply = await openai.chat.completions.create({
          max_tokens: 400,
          messages: [{content: `Fill in the ${name}.`, role: 'user'}],
          model: MODEL,
          response_format: {json_schema: {name, schema}, type: 'json_schema'},
          seed,
          temperature,
        })
        expect(reply.choices[0].finish_reason, `${name}, seed ${seed}: ${reply.choices[0].message.content}`).to.equal('stop')
        expectValid(schema, reply.choices[0].message.content!)
      }
  })

  it('gives forced tool calls arguments that fit their tool, on OpenAI and Anthropic', async () => {
    for (const {seed, temperature} of seeds(40)) {
      const reply = await openai.chat.completions.create({max_tokens: 300, messages: [{content: 'Do something.', role: 'user'}], model: MODEL, seed, temperature, tool_choice: 'required', tools: TOOLS})
      expect(reply.choices[0].finish_reason).to.equal('tool_calls')
      const call = reply.choices[0].message.tool_calls![0] as OpenAI.ChatCompletionMessageFunctionToolCall
      expectValid(TOOLS.find((tool) => tool.function.name === call.function.name)!.function.parameters, call.function.arguments)
    }

    for (const {temperature} of seeds(20)) {
      const tools = TOOLS.map(({function: {name, parameters}}) => ({input_schema: parameters as Anthropic.Tool.InputSchema, name}))
      const message = await anthropic.messages.create({max_tokens: 300, messages: [{content: 'Do something.', role: 'user'}], model: MODEL, temperature: temperature / 2, tool_choice: {type: 'any'}, tools})
      expect(message.stop_reason).to.equal('tool_use')
      const use = message.content[0] as Anthropic.ToolUseBlock
      expectValid(tools.find((tool) => tool.name === use.name)!.input_schema, JSON.stringify(use.input))
    }
  })

  it('says "length" when the budget ends before the schema is met, and "stop" only for replies that fit', async () => {
    const person = {properties: {name: {maxLength: 12, type: 'string'}, age: {type: 'integer'}}, required: ['name', 'age'], type: 'object'}
    const reasons = new Set<string>()
    for (const {seed, temperature} of seeds(40)) {
      const reply = await openai.chat.completions.create({
        max_tokens: 34,
        messages: [{content: 'Give me a person.', role: 'user'}],
        model: MODEL,
        response_format: {json_schema: {name: 'person', schema: person}, type: 'json_schema'},
        seed,
        stop: ['e', '"'],
        temperature,
      })
      const [choice] = reply.choices
      reasons.add(choice.finish_reason)
      if (choice.finish_reason === 'stop') expectValid(person, choice.message.content!)
      else expect(choice.finish_reason).to.equal('length')
    }

    expect([...reasons].sort(), 'both outcomes occur with this budget').to.deep.equal(['length', 'stop'])
  })

  it('ends a constrained reply where its grammar does, with ignore_eos or a banned end-of-turn token too', async () => {
    const format = {json_schema: {name: 'person', schema: SCHEMAS.person}, type: 'json_schema'}
    for (const [index, extra] of [{ignore_eos: true}, {logit_bias: {[RANDOM_LLAMA_TOKENS.imEnd]: -100}}].entries()) {
      const body = {max_tokens: 200, messages: [{content: 'A person?', role: 'user'}], model: MODEL, response_format: format, seed: index, temperature: 1, ...extra}
      const {body: reply, status} = await callApi(service, 'POST', '/v1/chat/completions', body)
      expect(status, JSON.stringify(reply)).to.equal(200)
      expect(reply.choices[0].finish_reason, JSON.stringify(extra)).to.equal('stop')
      expectValid(SCHEMAS.person, reply.choices[0].message.content)
    }
  })
})
