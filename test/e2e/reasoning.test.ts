/**
 * Reasoning models end to end: generated GGUF chat models registered as a reasoning model (`<think>` tags, as
 * DeepSeek-R1 and Qwen3) and as a plain one, served by a real `service-local` and read with the official OpenAI and
 * Anthropic clients. A random model never opens a reasoning block by itself, so the tests open it for it: the answer
 * continues an assistant turn that starts one (vLLM's continue_final_message, Anthropic's prefill), as a DeepSeek-R1
 * template's prompt does.
 */
import Anthropic from '@anthropic-ai/sdk'
import {expect} from 'chai'
import OpenAI from 'openai'

import {assertAnthropicMessage, assertAnthropicStream} from '../helpers/anthropic-shapes.js'
import {writeTinyChatModel} from '../helpers/models.js'
import {callApi, type RunningService, startService, temporaryDirectory} from '../helpers/service.js'

const THINKER = 'tiny-thinker'
/** The same weights, registered without the reasoning ability. */
const PLAIN = 'tiny-plain'
const ASK = [{content: 'What is 2+2?', role: 'user' as const}]
const THINKING = [...ASK, {content: '<think>\n', role: 'assistant' as const}]

describe('reasoning models (service-local, openai and @anthropic-ai/sdk clients)', function () {
  let service: RunningService
  let openai: OpenAI
  let anthropic: Anthropic

  before(async function () {
    const directory = await temporaryDirectory()
    service = await startService()
    openai = new OpenAI({apiKey: 'any', baseURL: `${service.url}/v1`, maxRetries: 0})
    anthropic = new Anthropic({apiKey: 'any', baseURL: `${service.url}/anthropic`, maxRetries: 0})
    const {family} = await writeTinyChatModel(directory, THINKER)
    const families = [
      {...family, model_ability: ['chat', 'reasoning', 'hybrid'], reasoning_end_tag: '</think>', reasoning_start_tag: '<think>'},
      {...family, model_ability: ['chat'], model_name: PLAIN},
    ]
    for (const model of families) {
      expect((await callApi(service, 'POST', '/v1/model_registrations/LLM', {model, persist: false})).status).to.equal(200)
      const launched = await callApi(service, 'POST', '/v1/models', {model_engine: 'llama.cpp', model_name: model.model_name, n_ctx: 2048, n_parallel: 1, n_threads: 1})
      expect(launched.status, JSON.stringify(launched.body)).to.equal(200)
    }
  })

  after(async () => service?.stop())

  it('lists a reasoning model with the reasoning ability (and hybrid when its family says so), as Xinference does', async () => {
    expect((await callApi(service, 'GET', `/v1/models/${THINKER}`)).body.model_ability).to.deep.equal(['chat', 'generate', 'reasoning', 'hybrid'])
    expect((await callApi(service, 'GET', `/v1/models/${PLAIN}`)).body.model_ability).to.deep.equal(['chat', 'generate'])
  })

  describe('OpenAI chat', () => {
    it('answers the thinking as reasoning_content, and max_tokens counts it', async () => {
      const answer = await openai.chat.completions.create({continue_final_message: true, max_tokens: 8, messages: THINKING, model: THINKER, temperature: 0} as OpenAI.ChatCompletionCreateParamsNonStreaming)
      const message = answer.choices[0].message as OpenAI.ChatCompletionMessage & {reasoning_content?: string | null}
      expect(message.reasoning_content).to.be.a('string').and.not.equal('')
      expect(message.content).to.equal('')
      expect(answer.usage?.completion_tokens).to.equal(8)
      expect(answer.choices[0].finish_reason).to.equal('length')
    })

    it('streams the same thinking as reasoning_content deltas', async () => {
      const request = {continue_final_message: true, max_tokens: 8, messages: THINKING, model: THINKER, temperature: 0}
      const answer = await openai.chat.completions.create(request)
      let reasoning = ''
      let content = ''
      for await (const chunk of await openai.chat.completions.create({...request, stream: true})) {
        const delta = (chunk.choices[0]?.delta ?? {}) as {content?: string | null; reasoning_content?: string}
        reasoning += delta.reasoning_content ?? ''
        content += delta.content ?? ''
      }

      expect(reasoning).to.equal((answer.choices[0].message as {reasoning_content?: string}).reasoning_content)
      expect(content).to.equal('')
    })

    it('returns no reasoning when enable_thinking or chat_template_kwargs turn thinking off', async () => {
      // Dify sends all of them at once: the template's arguments, Zhipu's thinking object and enable_thinking.
      const dify = {chat_template_kwargs: {enable_thinking: false, thinking: false}, enable_thinking: false, thinking: {type: 'disabled'}}
      for (const extra of [{enable_thinking: false}, {chat_template_kwargs: {enable_thinking: false}}, {chat_template_kwargs: {thinking: false}}, {thinking: {type: 'disabled'}}, dify]) {
        const asked = await callApi(service, 'POST', '/v1/chat/completions', {max_tokens: 6, messages: ASK, model: THINKER, temperature: 0, ...extra})
        expect(asked.status, JSON.stringify(extra)).to.equal(200)
        expect(asked.body.choices[0].message, JSON.stringify(extra)).to.include({reasoning_content: null})
        expect(asked.body.choices[0].message.content, JSON.stringify(extra)).to.be.a('string').and.not.equal('')
        const thinking = {continue_final_message: true, max_tokens: 6, messages: THINKING, model: THINKER, temperature: 0, ...extra}
        expect((await callApi(service, 'POST', '/v1/chat/completions', thinking)).body.choices[0].message, JSON.stringify(extra)).to.include({content: '', reasoning_content: null})
      }
    })

    it('reads a conversation that sends an answer back as it came, reasoning_content and all', async () => {
      const first = await openai.chat.completions.create({continue_final_message: true, max_tokens: 4, messages: THINKING, model: THINKER, temperature: 0} as OpenAI.ChatCompletionCreateParamsNonStreaming)
      const messages = [...ASK, first.choices[0].message, {content: 'And 3+3?', role: 'user' as const}]
      const next = await callApi(service, 'POST', '/v1/chat/completions', {max_tokens: 4, messages, model: THINKER, temperature: 0})
      expect(next.status, JSON.stringify(next.body)).to.equal(200)
    })

    it('refuses switches that disagree and template arguments it does not know, naming the field', async () => {
      const disagree = await callApi(service, 'POST', '/v1/chat/completions', {chat_template_kwargs: {enable_thinking: true}, enable_thinking: false, messages: ASK, model: THINKER})
      expect(disagree.status).to.equal(400)
      expect(disagree.body.error.param).to.equal('chat_template_kwargs.enable_thinking')
      const zhipu = await callApi(service, 'POST', '/v1/chat/completions', {enable_thinking: true, messages: ASK, model: THINKER, thinking: {type: 'disabled'}})
      expect(zhipu.body.error.param).to.equal('thinking.type')
      const unknown = await callApi(service, 'POST', '/v1/chat/completions', {chat_template_kwargs: {tools_in_user_message: true}, messages: ASK, model: THINKER})
      expect(unknown.status).to.equal(400)
      expect(unknown.body.error.message).to.contain('chat_template_kwargs.tools_in_user_message')
    })

    it("splits the reasoning of a model whose family does not say it reasons when its launch's reasoning_format does", async () => {
      const launched = await callApi(service, 'POST', '/v1/models', {model_engine: 'llama.cpp', model_name: PLAIN, model_uid: 'told-to-reason', n_ctx: 2048, reasoning_format: 'think'})
      expect(launched.status, JSON.stringify(launched.body)).to.equal(200)
      expect((await callApi(service, 'GET', '/v1/models/told-to-reason')).body.model_ability).to.deep.equal(['chat', 'generate', 'reasoning'])
      const answer = await callApi(service, 'POST', '/v1/chat/completions', {continue_final_message: true, max_tokens: 6, messages: THINKING, model: 'told-to-reason', temperature: 0})
      expect(answer.body.choices[0].message).to.include({content: ''}).and.to.have.property('reasoning_content').that.is.a('string').and.not.equal('')
      const refused = await callApi(service, 'POST', '/v1/models', {model_engine: 'llama.cpp', model_name: PLAIN, model_uid: 'bad-format', reasoning_format: 'tags'})
      expect(refused.status).to.equal(400)
      expect(refused.body.detail ?? refused.body.error?.message).to.contain('reasoning_format')
    })

    it("thinks as the launch's enable_thinking says when a request does not say, as Xinference's launch option", async () => {
      const launched = await callApi(service, 'POST', '/v1/models', {enable_thinking: false, model_engine: 'llama.cpp', model_name: THINKER, model_uid: 'launched-not-thinking', n_ctx: 2048})
      expect(launched.status, JSON.stringify(launched.body)).to.equal(200)
      const request = {continue_final_message: true, max_tokens: 6, messages: THINKING, model: 'launched-not-thinking', temperature: 0}
      expect((await callApi(service, 'POST', '/v1/chat/completions', request)).body.choices[0].message).to.include({reasoning_content: null})
      const asked = await callApi(service, 'POST', '/v1/chat/completions', {...request, enable_thinking: true})
      expect(asked.body.choices[0].message.reasoning_content).to.be.a('string').and.not.equal('')
    })

    it('gives a model that does not reason null reasoning_content and no reasoning deltas', async () => {
      const request = {continue_final_message: true, max_tokens: 6, messages: THINKING, model: PLAIN, temperature: 0}
      const answer = await callApi(service, 'POST', '/v1/chat/completions', request)
      expect(answer.body.choices[0].message.reasoning_content).to.equal(null)
      expect(answer.body.choices[0].message.content).to.be.a('string').and.not.equal('')
      for await (const chunk of await openai.chat.completions.create({...request, stream: true} as OpenAI.ChatCompletionCreateParamsStreaming))
        expect(chunk.choices[0]?.delta ?? {}).not.to.have.property('reasoning_content')
    })
  })

  describe('Anthropic messages', () => {
    const PREFILLED = [...ASK, {content: '<think>\n', role: 'assistant' as const}]

    it('answers the thinking in a thinking block, before the text, with a signature', async () => {
      const message = await anthropic.messages.create({max_tokens: 8, messages: PREFILLED, model: THINKER, temperature: 0})
      assertAnthropicMessage(message)
      expect(message.content.map((block) => block.type)).to.deep.equal(['thinking'])
      expect(message.content[0]).to.include({signature: ''}).and.to.have.property('thinking').that.is.a('string').and.not.equal('')
      expect(message.usage.output_tokens).to.equal(8)
    })

    it('streams it as a thinking block of thinking_delta events closed by a signature_delta', async () => {
      const request = {max_tokens: 8, messages: PREFILLED, model: THINKER, temperature: 0}
      const created = await anthropic.messages.create(request)
      const stream = anthropic.messages.stream(request)
      const events: Array<{type: string}> = []
      for await (const event of stream) events.push(event)
      assertAnthropicStream(events)
      const deltas = events.flatMap((event) => (event.type === 'content_block_delta' ? [(event as Anthropic.RawContentBlockDeltaEvent).delta.type] : []))
      expect(deltas.at(-1)).to.equal('signature_delta')
      expect(new Set(deltas.slice(0, -1))).to.deep.equal(new Set(['thinking_delta']))
      expect((await stream.finalMessage()).content).to.deep.equal(created.content)
    })

    it('takes thinking enabled with a budget below max_tokens, and disabled, which returns no thinking', async () => {
      const enabled = await anthropic.messages.create({max_tokens: 1030, messages: PREFILLED, model: THINKER, temperature: 0, thinking: {budget_tokens: 1024, type: 'enabled'}})
      expect(enabled.content[0].type).to.equal('thinking')
      const disabled = await anthropic.messages.create({max_tokens: 8, messages: PREFILLED, model: THINKER, temperature: 0, thinking: {type: 'disabled'}})
      expect(disabled.content).to.deep.equal([])
      const over = await callApi(service, 'POST', '/anthropic/v1/messages', {max_tokens: 1024, messages: ASK, model: THINKER, thinking: {budget_tokens: 1024, type: 'enabled'}})
      expect(over.status).to.equal(400)
      expect(over.body.error.message).to.contain('thinking.budget_tokens')
    })

    it("thinks as the model does with adaptive or between_tools, and leaves the text out of its blocks when display omits it", async () => {
      for (const type of ['adaptive', 'between_tools'] as const) {
        const message = await anthropic.messages.create({max_tokens: 8, messages: PREFILLED, model: THINKER, temperature: 0, thinking: {type} as Anthropic.ThinkingConfigParam})
        expect(message.content[0].type, type).to.equal('thinking')
      }

      const request = {max_tokens: 8, messages: PREFILLED, model: THINKER, temperature: 0, thinking: {budget_tokens: 1024, display: 'omitted', type: 'enabled'}}
      const omitted = await callApi(service, 'POST', '/anthropic/v1/messages', {...request, max_tokens: 1030})
      expect(omitted.body.content).to.deep.equal([{signature: '', thinking: '', type: 'thinking'}])
      const events: Array<{type: string}> = []
      for await (const event of anthropic.messages.stream({...request, max_tokens: 1030} as Anthropic.MessageCreateParams)) events.push(event)
      assertAnthropicStream(events)
      expect(events.filter((event) => event.type === 'content_block_delta').map((event) => (event as Anthropic.RawContentBlockDeltaEvent).delta.type)).to.deep.equal(['signature_delta'])
    })

    it('reads a conversation that hands back earlier thinking blocks', async () => {
      const turns: Anthropic.MessageParam[] = [
        ...ASK,
        {content: [{signature: '', thinking: 'Two and two.', type: 'thinking'}, {text: '4', type: 'text'}], role: 'assistant'},
        {content: 'And 3+3?', role: 'user'},
      ]
      const message = await anthropic.messages.create({max_tokens: 4, messages: turns, model: THINKER, temperature: 0})
      assertAnthropicMessage(message)
    })
  })
})
