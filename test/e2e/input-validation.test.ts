/**
 * Values a schema type admits but no engine can honour: numbers past what the engine holds (1e308, 2^64, a seed
 * past 64 bits), empty messages and stop strings, metadata of the wrong type, log probabilities, a context longer
 * than the model was trained on.
 * Each is a 400 naming the field, through the official clients where they send the value, and the service keeps
 * serving; null where OpenAI allows it means "not given".
 */
import Anthropic from '@anthropic-ai/sdk'
import {expect} from 'chai'
import OpenAI from 'openai'

import {assertOpenAiSchema} from '../helpers/conformance.js'
import {serveTinyChatModel} from '../helpers/models.js'
import {callApi, type RunningService} from '../helpers/service.js'

const MODEL = 'tiny-chat'
const HI = [{content: 'hi', role: 'user' as const}]

describe('input validation (service-local, openai and @anthropic-ai/sdk clients)', function () {
  let service: RunningService
  let openai: OpenAI
  let anthropic: Anthropic

  before(async function () {
    ;({anthropic, openai, service} = await serveTinyChatModel(MODEL, {n_ctx: 1024, n_parallel: 1, n_threads: 1}))
  })

  after(async () => service?.stop())

  /** The client's error for a request the service must refuse; a reply instead fails the test. */
  async function refused<T>(request: Promise<T>): Promise<{status: number; param?: string | null; message: string}> {
    const outcome = await request.then(
      (reply) => ({reply}),
      (error) => ({error}),
    )
    if ('reply' in outcome) throw new Error(`expected a 400, got a reply: ${JSON.stringify(outcome.reply).slice(0, 200)}`)
    return outcome.error
  }

  const stillServes = async () => {
    const reply = await openai.chat.completions.create({max_tokens: 2, messages: HI, model: MODEL})
    expect(reply.choices[0].finish_reason).to.be.oneOf(['length', 'stop'])
  }

  it('refuses chat sampling numbers no engine can honour, naming the field', async () => {
    const cases: Array<[Record<string, unknown>, string, RegExp]> = [
      [{max_tokens: 1e308}, 'max_tokens', /`max_tokens` must be an integer between 1 and 2147483647/],
      [{max_tokens: 2 ** 64}, 'max_tokens', /`max_tokens` must be an integer between 1 and 2147483647/],
      [{max_completion_tokens: 1e308}, 'max_completion_tokens', /`max_completion_tokens` must be an integer between 1 and 2147483647/],
      [{top_k: 1e12}, 'top_k', /`top_k` must be an integer between 0 and 2147483647/],
      [{seed: 2 ** 80}, 'seed', /`seed` must be a 64-bit integer/],
      [{seed: 1.5}, 'seed', /`seed` must be a 64-bit integer/],
      [{metadata: 'x'}, 'metadata', /`metadata` must be an object/],
      [{metadata: {team: 7}}, 'metadata.team', /`metadata.team` must be a string/],
      [{user: 42}, 'user', /`user` must be a string/],
    ]
    for (const [fields, param, message] of cases) {
      const error = await refused(openai.chat.completions.create({max_tokens: 2, messages: HI, model: MODEL, ...fields} as OpenAI.ChatCompletionCreateParamsNonStreaming))
      expect(error, JSON.stringify(fields)).to.be.instanceOf(OpenAI.BadRequestError)
      expect(error.param, JSON.stringify(fields)).to.equal(param)
      expect(error.message).to.match(message)
    }

    await stillServes()
  })

  it('refuses a chat message without content, except an assistant message that calls tools', async () => {
    const cases: Array<[unknown[], string]> = [
      [[{role: 'user'}], 'messages[0].content'],
      [[{content: null, role: 'user'}], 'messages[0].content'],
      [[{content: [], role: 'user'}], 'messages[0].content'],
      [[{content: 'Be brief.', role: 'system'}, {role: 'user'}], 'messages[1].content'],
      [[{content: 'hi', role: 'user'}, {content: null, role: 'assistant'}, {content: 'again', role: 'user'}], 'messages[1].content'],
    ]
    for (const [messages, param] of cases) {
      const error = await refused(openai.chat.completions.create({max_tokens: 2, messages, model: MODEL} as OpenAI.ChatCompletionCreateParamsNonStreaming))
      expect(error, JSON.stringify(messages)).to.be.instanceOf(OpenAI.BadRequestError)
      expect(error.param, JSON.stringify(messages)).to.equal(param)
      expect(error.message).to.match(/content/)
    }

    const call = {function: {arguments: '{}', name: 'noop'}, id: 'call_1', type: 'function' as const}
    const toolTurn = await openai.chat.completions.create({
      max_tokens: 2,
      messages: [...HI, {content: null, role: 'assistant', tool_calls: [call]}, {content: 'done', role: 'tool', tool_call_id: 'call_1'}],
      model: MODEL,
    })
    expect(toolTurn.choices).to.have.length(1)
  })

  it('takes null for max_tokens and seed as OpenAI does: the value is not given', async () => {
    const completion = await openai.completions.create({max_tokens: null, model: MODEL, prompt: 'Once upon a time', seed: null, temperature: 0})
    assertOpenAiSchema('CreateCompletionResponse', completion)
    // Not given means OpenAI's default of 16 tokens for this route.
    expect(completion.usage!.completion_tokens).to.be.at.most(16)
    const defaulted = await openai.completions.create({model: MODEL, prompt: 'Once upon a time', temperature: 0})
    expect(completion.choices[0].text).to.equal(defaulted.choices[0].text)
    const chat = await openai.chat.completions.create({max_completion_tokens: 3, max_tokens: null, messages: HI, model: MODEL})
    expect(chat.usage!.completion_tokens).to.be.at.most(3)
  })

  it("takes the fields of OpenAI's at values that ask for nothing the engines lack, and refuses the rest as not supported", async () => {
    const chat = await openai.chat.completions.create({
      logprobs: false,
      max_tokens: 2,
      messages: HI,
      model: MODEL,
      prompt_cache_key: 'conversation-7',
      safety_identifier: 'user-hash',
      top_logprobs: 0,
    })
    assertOpenAiSchema('CreateChatCompletionResponse', chat)
    const stream = await openai.chat.completions.create({max_tokens: 2, messages: HI, model: MODEL, stream: true, stream_options: {include_obfuscation: false, include_usage: true}})
    let usage
    for await (const chunk of stream) usage = chunk.usage ?? usage
    expect(usage!.completion_tokens).to.be.at.most(2)
    const completion = await openai.completions.create({best_of: 1, logprobs: null, max_tokens: 2, model: MODEL, prompt: 'Once upon a time'})
    assertOpenAiSchema('CreateCompletionResponse', completion)

    const refusals: Array<[Promise<unknown>, string]> = [
      [openai.chat.completions.create({logprobs: true, max_tokens: 2, messages: HI, model: MODEL, top_logprobs: 2}), 'logprobs'],
      [openai.chat.completions.create({max_tokens: 2, messages: HI, model: MODEL, top_logprobs: 2}), 'top_logprobs'],
      [openai.completions.create({logprobs: 2, max_tokens: 2, model: MODEL, prompt: 'Once'}), 'logprobs'],
      [openai.completions.create({best_of: 3, max_tokens: 2, model: MODEL, prompt: 'Once'}), 'best_of'],
    ]
    for (const [request, param] of refusals) {
      const error = await refused(request)
      expect(error, param).to.be.instanceOf(OpenAI.BadRequestError)
      expect(error.param).to.equal(param)
      expect(error.message).to.contain(`\`${param}\` is not supported`)
    }

    await stillServes()
  })

  it('refuses an empty stop string, which would end every answer at once, naming stop or stop_sequences', async () => {
    for (const stop of ['', ['.', '']]) {
      const requests: Array<Promise<unknown>> = [
        openai.chat.completions.create({max_tokens: 2, messages: HI, model: MODEL, stop}),
        openai.completions.create({max_tokens: 2, model: MODEL, prompt: 'Once', stop}),
      ]
      for (const request of requests) {
        const error = await refused(request)
        expect(error, JSON.stringify(stop)).to.be.instanceOf(OpenAI.BadRequestError)
        expect(error.param).to.equal('stop')
        expect(error.message).to.match(/`stop` must be a non-empty string or an array of up to 16 non-empty strings/)
      }
    }

    const anthropicError = await refused(anthropic.messages.create({max_tokens: 2, messages: HI, model: MODEL, stop_sequences: ['']}))
    expect(anthropicError).to.be.instanceOf(Anthropic.BadRequestError)
    expect(anthropicError.message).to.match(/`stop_sequences\[0\]` must be a non-empty string/)
    await stillServes()
  })

  it('refuses completion, embedding and rerank numbers past what they can mean, naming the field', async () => {
    const cases: Array<[string, Record<string, unknown>, string, RegExp]> = [
      ['/v1/completions', {max_tokens: 2 ** 64, model: MODEL, prompt: 'hi'}, 'max_tokens', /between 1 and 2147483647/],
      ['/v1/completions', {model: MODEL, prompt: 'hi', seed: -(2 ** 80)}, 'seed', /64-bit integer/],
      ['/v1/completions', {model: MODEL, prompt: [2 ** 64]}, 'prompt', /token ids/],
      ['/v1/embeddings', {dimensions: 1e308, input: 'hi', model: 'any'}, 'dimensions', /`dimensions` must be an integer/],
      ['/v1/embeddings', {input: [[1, 2 ** 70]], model: 'any'}, 'input', /token ids/],
      ['/v1/embeddings', {input: 'hi', model: 'any', user: {}}, 'user', /`user` must be a string/],
      ['/v1/rerank', {documents: ['a'], model: 'any', query: 'q', top_n: 2 ** 64}, 'top_n', /`top_n` must be an integer/],
      ['/v1/rerank', {documents: ['a'], max_chunks_per_doc: 1e308, model: 'any', query: 'q'}, 'max_chunks_per_doc', /`max_chunks_per_doc` must be an integer/],
    ]
    for (const [path, body, param, message] of cases) {
      const response = await callApi(service, 'POST', path, body)
      expect(response.status, `${path} ${JSON.stringify(body)}`).to.equal(400)
      assertOpenAiSchema('ErrorResponse', response.body)
      expect(response.body.error.param, `${path} ${JSON.stringify(body)}`).to.equal(param)
      expect(response.body.error.message).to.match(message)
    }

    await stillServes()
  })

  it('refuses Anthropic messages with numbers past what they can mean, metadata that is not an object, or empty turns', async () => {
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{top_k: 1e12}, /`top_k` must be an integer between 0 and 2147483647/],
      [{metadata: 'x'}, /`metadata` must be a JSON object/],
      [{metadata: {user_id: 5}}, /`metadata.user_id` must be a string/],
      [{messages: [{content: '', role: 'user'}]}, /`messages\[0\].content` is empty/],
      [{messages: [{content: [], role: 'user'}]}, /`messages\[0\].content` is empty/],
      [{messages: [{content: 'hi', role: 'user'}, {content: [], role: 'assistant'}, {content: 'again', role: 'user'}]}, /`messages\[1\].content` is empty/],
    ]
    for (const [fields, message] of cases) {
      const error = await refused(anthropic.messages.create({max_tokens: 2, messages: HI, model: MODEL, ...fields} as Anthropic.MessageCreateParamsNonStreaming))
      expect(error, JSON.stringify(fields)).to.be.instanceOf(Anthropic.BadRequestError)
      expect(error.message, JSON.stringify(fields)).to.match(message)
    }

    // The SDK itself refuses to send a max_tokens this large without streaming, so these go raw.
    for (const maxTokens of [1e308, 2 ** 64]) {
      const response = await callApi(service, 'POST', '/anthropic/v1/messages', {max_tokens: maxTokens, messages: HI, model: MODEL})
      expect(response.status, String(maxTokens)).to.equal(400)
      expect(response.body).to.deep.include({type: 'error'})
      expect(response.body.error.type).to.equal('invalid_request_error')
      expect(response.body.error.message).to.match(/`max_tokens` must be an integer between 1 and 2147483647/)
    }

    const counted = await refused(anthropic.messages.countTokens({messages: [{content: [], role: 'user'}], model: MODEL}))
    expect(counted).to.be.instanceOf(Anthropic.BadRequestError)
    expect(counted.message).to.match(/`messages\[0\].content` is empty/)
    // A final assistant turn may be empty: it is where the answer goes.
    const prefilled = await anthropic.messages.create({max_tokens: 2, messages: [...HI, {content: '', role: 'assistant'}], metadata: {user_id: 'u-1'}, model: MODEL})
    expect(prefilled.type).to.equal('message')
  })

  it('refuses a launch whose n_ctx is longer than the model was trained on, or whose n_batch exceeds the context, saying the limit', async () => {
    const response = await callApi(service, 'POST', '/v1/models', {model_engine: 'llama.cpp', model_name: MODEL, model_uid: 'too-long', n_ctx: 1e9, n_parallel: 256, n_threads: 1})
    expect(response.status).to.equal(400)
    expect(response.body.error.message).to.match(/`n_ctx` 1000000000 is longer than the 2048 tokens this model was trained on; use an n_ctx of 2048 or less/)
    expect(response.body.error.param).to.equal('n_ctx')
    expect((await callApi(service, 'GET', '/v1/models/too-long')).status).to.equal(404)
    const estimate = await callApi(service, 'POST', '/v1/models/memory', {context_length: 1e9, model_engine: 'llama.cpp', model_name: MODEL})
    expect(estimate.status).to.equal(400)
    expect(estimate.body.error.message).to.match(/`n_ctx` 1000000000 is longer than the 2048 tokens this model was trained on/)
    const batch = await callApi(service, 'POST', '/v1/models', {model_engine: 'llama.cpp', model_name: MODEL, model_uid: 'too-big', n_batch: 2 ** 40, n_ctx: 512, n_parallel: 2, n_threads: 1})
    expect(batch.status).to.equal(400)
    expect(batch.body.error.message).to.match(/`n_batch` 1099511627776 is more than the 1024 tokens of the whole context \(n_ctx × n_parallel\); use an n_batch of 1024 or less/)
    expect(batch.body.error.param).to.equal('n_batch')
    const absurd = await callApi(service, 'POST', '/v1/models', {model_engine: 'llama.cpp', model_name: MODEL, model_uid: 'too-wide', n_parallel: 257})
    expect(absurd.status).to.equal(400)
    expect(absurd.body.error.param).to.equal('n_parallel')
    await stillServes()
  })
})
