/**
 * Chat generation as vLLM and llama-server behave, on a generated GGUF model served by the llama.cpp engine: each
 * request without a seed samples with a seed of its own, and a final assistant message is answered after, unless
 * vLLM's `continue_final_message` asks for it to be continued.
 */
import type OpenAI from 'openai'

import {expect} from 'chai'

import {serveTinyChatModel} from '../helpers/models.js'
import {callApi, type RunningService} from '../helpers/service.js'

const MODEL = 'tiny-generation'

describe('chat generation (service-local, llama.cpp engine)', function () {
  let service: RunningService
  let client: OpenAI

  before(async () => {
    ;({openai: client, service} = await serveTinyChatModel(MODEL, {n_ctx: 1024, n_parallel: 4, n_threads: 1}))
  })

  after(async () => service?.stop())

  it('samples requests without a seed apart, even when they arrive together', async () => {
    const request = {max_tokens: 16, messages: [{content: 'Hello', role: 'user' as const}], model: MODEL, temperature: 1}
    const answers = await Promise.all(Array.from({length: 4}, () => client.chat.completions.create(request)))
    const texts = answers.map((answer) => answer.choices[0].message.content)
    expect(new Set(texts).size, texts.join(' | ')).to.be.greaterThan(1)
  })

  it('answers after a final assistant message, and continues it only when continue_final_message asks (vLLM)', async () => {
    const ask = {content: 'Hello!', role: 'user'}
    const messages = [ask, {content: 'Sure:', role: 'assistant'}]
    const chat = (extra: Record<string, unknown>) => callApi(service, 'POST', '/v1/chat/completions', {max_tokens: 4, messages, model: MODEL, temperature: 0, ...extra})
    const asked = (await chat({messages: [ask]})).body.usage.prompt_tokens
    const answered = (await chat({})).body.usage.prompt_tokens
    const continued = await chat({add_generation_prompt: false, continue_final_message: true})
    expect(continued.status).to.equal(200)
    // The prefill's own tokens (at most one a character), where answering adds an end of turn and a new turn's header.
    expect(continued.body.usage.prompt_tokens - asked).to.be.within(1, 'Sure:'.length)
    expect(answered - asked).to.be.greaterThan('Sure:'.length)
    const alone = await chat({continue_final_message: true})
    expect(alone.body.choices[0].message.content).to.equal(continued.body.choices[0].message.content)

    const cases: Array<[Record<string, unknown>, string, RegExp]> = [
      [{add_generation_prompt: true, continue_final_message: true}, 'continue_final_message', /cannot both be true/],
      [{continue_final_message: true, messages: [ask]}, 'continue_final_message', /must be an assistant message without tool_calls; messages\[0\] is a user message/],
      [{add_generation_prompt: false}, 'add_generation_prompt', /only with `continue_final_message` true/],
    ]
    for (const [extra, param, message] of cases) {
      const refused = await chat(extra)
      expect(refused.status, JSON.stringify(extra)).to.equal(400)
      expect(refused.body.error).to.include({param}).and.have.property('message').that.matches(message)
    }
  })
})
