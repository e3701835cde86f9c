/**
 * Chat generation as vLLM and llama-server behave, on a generated GGUF model served by the llama.cpp engine: each
 * request without a seed samples with a seed of its own.
 */
import type OpenAI from 'openai'

import {expect} from 'chai'

import {serveTinyChatModel} from '../helpers/models.js'
import {type RunningService} from '../helpers/service.js'

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
})
