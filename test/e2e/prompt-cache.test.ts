/**
 * Prompt tokens a conversation's next turn takes from the llama.cpp sequence's cache, as OpenAI's
 * `usage.prompt_tokens_details.cached_tokens` (chat and completions, streamed or not) and Anthropic's
 * `usage.cache_read_input_tokens`, on a real `service-local` with a generated model, read through the official
 * clients' own types. Sent again whole, a prompt is reused but its last token, which is decoded again for its logits.
 */
import type Anthropic from '@anthropic-ai/sdk'
import type OpenAI from 'openai'

import {expect} from 'chai'

import {serveTinyChatModel} from '../helpers/models.js'
import {type RunningService} from '../helpers/service.js'

const MODEL = 'tiny-cache'

describe('prompt tokens reused from the cache (llama.cpp, openai and Anthropic clients)', function () {
  let service: RunningService
  let openai: OpenAI
  let anthropic: Anthropic

  before(async () => {
    // One sequence: every request finds what the one before it left.
    ;({anthropic, openai, service} = await serveTinyChatModel(MODEL, {n_ctx: 1024, n_parallel: 1, n_threads: 1}))
  })

  after(async () => service?.stop())

  const cached = (usage: OpenAI.CompletionUsage | undefined) => usage?.prompt_tokens_details?.cached_tokens

  it("reports a chat's next turn reusing the turn before it, and a chat sent again reusing all but its last token", async () => {
    const first: OpenAI.ChatCompletionMessageParam[] = [{content: 'You are terse.', role: 'system'}, {content: 'Tell me a story.', role: 'user'}]
    const turn1 = await openai.chat.completions.create({max_completion_tokens: 8, messages: first, model: MODEL, temperature: 0})
    expect(cached(turn1.usage)).to.equal(0)

    const second: OpenAI.ChatCompletionMessageParam[] = [...first, {content: turn1.choices[0].message.content!, role: 'assistant'}, {content: 'And then?', role: 'user'}]
    const turn2 = await openai.chat.completions.create({max_completion_tokens: 8, messages: second, model: MODEL, temperature: 0})
    // The first turn's prompt is where the second's begins; its reply, tokenized again, may differ where it joins.
    expect(cached(turn2.usage)).to.be.at.least(turn1.usage!.prompt_tokens - 1).and.below(turn2.usage!.prompt_tokens)

    const again = await openai.chat.completions.create({max_completion_tokens: 8, messages: second, model: MODEL, temperature: 0})
    expect(cached(again.usage)).to.equal(again.usage!.prompt_tokens - 1)
    expect(again.usage!.prompt_tokens).to.equal(turn2.usage!.prompt_tokens)

    const streamed = await openai.chat.completions.create({max_completion_tokens: 8, messages: second, model: MODEL, stream: true, stream_options: {include_usage: true}, temperature: 0})
    let usage: OpenAI.CompletionUsage | undefined
    for await (const chunk of streamed) usage = chunk.usage ?? usage
    expect(usage).to.deep.equal(again.usage)
  })

  it("counts what node-llama-cpp's own chat reused too (a request with tools)", async () => {
    const request = {max_completion_tokens: 8, messages: [{content: 'Weather in Oslo?', role: 'user' as const}], model: MODEL, temperature: 0, tools: [{function: {name: 'weather', parameters: {properties: {city: {type: 'string'}}, type: 'object'}}, type: 'function' as const}]}
    const once = await openai.chat.completions.create(request)
    const again = await openai.chat.completions.create(request)
    expect(cached(again.usage)).to.equal(again.usage!.prompt_tokens - 1)
  })

  it('reports completions the same way, summed over several prompts', async () => {
    const prompt = 'Once upon a time there was a small red fox who lived'
    const fresh = await openai.completions.create({max_tokens: 4, model: MODEL, prompt: 'A different beginning altogether', temperature: 0})
    const whole = await openai.completions.create({max_tokens: 4, model: MODEL, prompt, temperature: 0})
    expect(cached(whole.usage)).to.be.below(whole.usage!.prompt_tokens - 1)
    const again = await openai.completions.create({max_tokens: 4, model: MODEL, prompt, temperature: 0})
    expect(cached(again.usage)).to.equal(again.usage!.prompt_tokens - 1)

    let usage: OpenAI.CompletionUsage | undefined
    for await (const chunk of await openai.completions.create({max_tokens: 4, model: MODEL, prompt, stream: true, stream_options: {include_usage: true}, temperature: 0})) usage = chunk.usage ?? usage
    expect(usage).to.deep.equal(again.usage)
    expect(cached(fresh.usage)).to.be.below(fresh.usage!.prompt_tokens - 1)

    // One sequence: the two prompts run one after the other, each finding the whole of itself there.
    const twice = await openai.completions.create({max_tokens: 4, model: MODEL, prompt: [prompt, prompt], temperature: 0})
    expect(twice.usage).to.deep.include({prompt_tokens: 2 * again.usage!.prompt_tokens, prompt_tokens_details: {cached_tokens: 2 * cached(again.usage)!}})
  })

  it("reports Anthropic's cache_read_input_tokens beside input_tokens, the two making the whole prompt, streamed or not", async () => {
    const request = {max_tokens: 6, messages: [{content: 'Hello', role: 'user' as const}, {content: 'Hi there.', role: 'assistant' as const}, {content: 'How are you?', role: 'user' as const}], model: MODEL, system: 'Be kind.', temperature: 0}
    await anthropic.messages.create(request)
    const message = await anthropic.messages.create(request)
    const {cache_read_input_tokens: read, input_tokens: input} = message.usage
    const counted = await anthropic.messages.countTokens({messages: request.messages, model: MODEL, system: request.system})
    expect([read, input]).to.deep.equal([counted.input_tokens - 1, 1])

    const stream = anthropic.messages.stream(request)
    const delta = await new Promise<Anthropic.MessageDeltaUsage>((resolve) => stream.on('streamEvent', (event) => event.type === 'message_delta' && resolve(event.usage)))
    await stream.done()
    expect([delta.input_tokens, delta.cache_read_input_tokens]).to.deep.equal([input, read])
  })
})
