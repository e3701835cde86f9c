/**
 * The OpenAI and Anthropic LLM routes with a stand-in model: what each request body is let through as (the payload the
 * model is given) and what is refused before the model sees it, through each route's own schema and handler as the
 * HTTP app runs them.
 */
import {expect} from 'chai'

import type {KernelApi, ModelDirectory, RouteDefinition, RouteRequest} from '../../src/kernel/contracts.js'

import {anthropicRoutes} from '../../plugins/model-llm/src/anthropic.js'
import {chatRoute} from '../../plugins/model-llm/src/chat.js'
import {completionsRoute} from '../../plugins/model-llm/src/completions.js'
import {createKernelApi} from '../../src/kernel/kernel.js'

const quiet = {debug() {}, error() {}, info() {}, warn() {}}
const api: KernelApi = createKernelApi('0.0.0', quiet)
const MODEL = 'stand-in'
const HI = [{content: 'hi', role: 'user'}]

/** A chat model that answers "ok" to anything, keeping each payload it is given; `done` adds to its last event. */
function standIn(done: Record<string, unknown> = {}) {
  const payloads: Array<Record<string, unknown>> = []
  const models = {
    get: () => ({
      abilities: ['chat', 'generate'],
      description: {},
      async *invoke(_operation: string, payload: Record<string, unknown>) {
        payloads.push(payload)
        yield {promptTokens: 3, type: 'start'}
        yield {text: 'ok', type: 'text'}
        yield {completionTokens: 1, finishReason: 'stop', promptTokens: 3, type: 'done', ...done}
      },
      modelName: MODEL,
      modelType: 'LLM',
      uid: MODEL,
    }),
    list: () => [],
  } as unknown as ModelDirectory
  return {models, payloads}
}

const routes = {
  anthropic: anthropicRoutes(api).find((route) => route.path === '/anthropic/v1/messages')! as RouteDefinition<unknown>,
  chat: chatRoute(api) as RouteDefinition<unknown>,
  completions: completionsRoute(api) as RouteDefinition<unknown>,
}

/** The request as the app runs it: the body through the route's schema, then its handler; the payload the model got. */
async function send(route: keyof typeof routes, body: Record<string, unknown>, done?: Record<string, unknown>) {
  const {models, payloads} = standIn(done)
  const definition = routes[route]
  const parsed = definition.body!.parse(body)
  const result = await definition.handler({body: parsed, models, signal: new AbortController().signal} as unknown as RouteRequest<unknown>)
  return {payload: payloads[0], result: result as {body?: any}}
}

/** The 400 a request gets; a reply instead fails the test. */
async function refusal(route: keyof typeof routes, body: Record<string, unknown>) {
  const outcome = await send(route, body).then(
    (reply) => ({reply}),
    (error: {code: string; message: string; param?: string; status: number}) => ({error}),
  )
  if ('reply' in outcome) throw new Error(`expected a 400, got ${JSON.stringify(outcome.reply.result.body).slice(0, 200)}`)
  expect(outcome.error.status, outcome.error.message).to.equal(400)
  return outcome.error
}

describe('LLM routes (stand-in model)', () => {
  describe("OpenAI's fields", () => {
    it('accepts the fields OpenAI defines at values that ask for nothing the engines lack', async () => {
      const chat = [
        {logprobs: false},
        {logprobs: null, top_logprobs: null},
        {logprobs: false, top_logprobs: 0},
        {stream: true, stream_options: {include_obfuscation: false, include_usage: true}},
        {prompt_cache_key: 'conversation-7', safety_identifier: 'user-hash'},
        {prompt_cache_key: null, safety_identifier: null},
      ]
      for (const fields of chat) expect((await send('chat', {messages: HI, model: MODEL, ...fields})).payload, JSON.stringify(fields)).to.have.property('messages')
      const completions = [{logprobs: null}, {best_of: 1}, {best_of: null}, {stream: true, stream_options: {include_obfuscation: true}}]
      for (const fields of completions) expect((await send('completions', {model: MODEL, prompt: 'Once', ...fields})).payload, JSON.stringify(fields)).to.include({prompt: 'Once'})
    })

    it('refuses log probabilities and best_of, naming the field and saying it is not supported, before the model runs', async () => {
      const cases: Array<[keyof typeof routes, Record<string, unknown>, string, RegExp]> = [
        ['chat', {logprobs: true}, 'logprobs', /`logprobs` is not supported: the engines here return no log probabilities; leave it out or set it to false/],
        ['chat', {logprobs: true, top_logprobs: 2}, 'logprobs', /`logprobs` is not supported/],
        ['chat', {top_logprobs: 2}, 'top_logprobs', /`top_logprobs` is not supported: .*set it to 0/],
        ['completions', {logprobs: 2}, 'logprobs', /`logprobs` is not supported: .*set it to null/],
        ['completions', {logprobs: 0}, 'logprobs', /`logprobs` is not supported/],
        ['completions', {best_of: 3}, 'best_of', /`best_of` is not supported: one completion is generated per prompt; leave it out or set it to 1/],
      ]
      for (const [route, fields, param, message] of cases) {
        const body = route === 'chat' ? {messages: HI, model: MODEL, ...fields} : {model: MODEL, prompt: 'Once', ...fields}
        const error = await refusal(route, body)
        expect(error.param, JSON.stringify(fields)).to.equal(param)
        expect(error.message, JSON.stringify(fields)).to.match(message)
        expect(error.code).to.equal('invalid_request')
      }
    })

    it("holds the new fields to OpenAI's types and ranges, and still refuses a field OpenAI does not define", async () => {
      const cases: Array<[keyof typeof routes, Record<string, unknown>, string]> = [
        ['chat', {top_logprobs: 21}, 'top_logprobs'],
        ['chat', {logprobs: 'yes'}, 'logprobs'],
        ['chat', {safety_identifier: 'x'.repeat(65)}, 'safety_identifier'],
        ['chat', {prompt_cache_key: 7}, 'prompt_cache_key'],
        ['chat', {stream_options: {include_obfuscation: 'no'}}, 'stream_options.include_obfuscation'],
        ['completions', {best_of: 21}, 'best_of'],
        ['completions', {logprobs: 6}, 'logprobs'],
        ['completions', {logprobs: true}, 'logprobs'],
      ]
      for (const [route, fields, param] of cases) {
        const body = route === 'chat' ? {messages: HI, model: MODEL, ...fields} : {model: MODEL, prompt: 'Once', ...fields}
        expect((await refusal(route, body)).param, JSON.stringify(fields)).to.equal(param)
      }

      const unknown = await refusal('chat', {messages: HI, model: MODEL, top_logprob: 0})
      expect(unknown).to.include({code: 'unknown_parameter', param: 'top_logprob'})
    })

    it('describes the new fields in the schema the OpenAPI document is made of', () => {
      const chat = routes.chat.body!.json.properties as Record<string, Record<string, unknown>>
      expect(chat).to.include.keys('logprobs', 'top_logprobs', 'prompt_cache_key', 'safety_identifier')
      expect(JSON.stringify(chat.logprobs)).to.contain('Only false is supported')
      expect(JSON.stringify(chat.stream_options)).to.contain('include_obfuscation')
      const completions = routes.completions.body!.json.properties as Record<string, Record<string, unknown>>
      expect(JSON.stringify(completions.best_of)).to.contain('Only 1 is supported')
      expect(JSON.stringify(completions.logprobs)).to.contain('Only null is supported')
    })
  })

  describe('stop strings', () => {
    it('refuses an empty stop string, which would end every answer at once, naming stop or stop_sequences', async () => {
      const cases: Array<[keyof typeof routes, Record<string, unknown>, string, RegExp]> = [
        ['chat', {messages: HI, model: MODEL, stop: ''}, 'stop', /`stop` must be a non-empty string or an array of up to 16 non-empty strings/],
        ['chat', {messages: HI, model: MODEL, stop: ['.', '']}, 'stop', /`stop` must be a non-empty string/],
        ['completions', {model: MODEL, prompt: 'Once', stop: ''}, 'stop', /`stop` must be a non-empty string/],
        ['completions', {model: MODEL, prompt: 'Once', stop: ['']}, 'stop', /`stop` must be a non-empty string/],
        ['anthropic', {max_tokens: 5, messages: HI, model: MODEL, stop_sequences: ['']}, 'stop_sequences[0]', /`stop_sequences\[0\]` must be a non-empty string/],
      ]
      for (const [route, body, param, message] of cases) {
        const error = await refusal(route, body)
        expect(error.param, JSON.stringify(body)).to.equal(param)
        expect(error.message, JSON.stringify(body)).to.match(message)
      }
    })

    it('passes non-empty stop strings on, and Anthropic names the sequence that stopped the answer', async () => {
      expect((await send('chat', {messages: HI, model: MODEL, stop: 'END'})).payload.stop).to.deep.equal(['END'])
      expect((await send('completions', {model: MODEL, prompt: 'Once', stop: [' ', '\n']})).payload.stop).to.deep.equal([' ', '\n'])
      const {payload, result} = await send('anthropic', {max_tokens: 5, messages: HI, model: MODEL, stop_sequences: ['\n']}, {stopSequence: '\n'})
      expect(payload.stop).to.deep.equal(['\n'])
      expect(result.body).to.include({stop_reason: 'stop_sequence', stop_sequence: '\n'})
      expect((await send('anthropic', {max_tokens: 5, messages: HI, model: MODEL})).result.body).to.include({stop_reason: 'end_turn', stop_sequence: null})
    })
  })

  describe('text given in parts', () => {
    const parts = (...texts: string[]) => texts.map((text) => ({text, type: 'text'}))

    it('joins OpenAI text parts with a line break, as vLLM does', async () => {
      const {payload} = await send('chat', {messages: [{content: parts('You are terse.', 'Answer in French.'), role: 'system'}, {content: parts('Hi', 'there'), role: 'user'}], model: MODEL})
      expect(payload.messages).to.deep.equal([
        {content: 'You are terse.\nAnswer in French.', role: 'system'},
        {content: 'Hi\nthere', role: 'user'},
      ])
    })

    it('joins Anthropic text blocks with a line break: the system prompt, a turn, a tool result', async () => {
      const toolUse = {id: 'toolu_1', input: {}, name: 'clock', type: 'tool_use'}
      const {payload} = await send('anthropic', {
        max_tokens: 5,
        messages: [
          {content: parts('Hi', 'there'), role: 'user'},
          {content: [...parts('Let me look.'), toolUse], role: 'assistant'},
          {content: [{content: parts('12:00', 'UTC'), tool_use_id: 'toolu_1', type: 'tool_result'}, ...parts('Thanks.', 'And the date?')], role: 'user'},
        ],
        model: MODEL,
        system: parts('You are terse.', 'Answer in French.'),
      })
      expect(payload.messages).to.deep.equal([
        {content: 'You are terse.\nAnswer in French.', role: 'system'},
        {content: 'Hi\nthere', role: 'user'},
        {content: 'Let me look.', role: 'assistant', toolCalls: [{arguments: '{}', id: 'toolu_1', name: 'clock'}]},
        {content: '12:00\nUTC', role: 'tool', toolCallId: 'toolu_1'},
        {content: 'Thanks.\nAnd the date?', role: 'user'},
      ])
    })
  })
})
