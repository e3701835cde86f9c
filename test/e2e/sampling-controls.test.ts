/** `logit_bias` and `ignore_eos`, which let a benchmark ask any model for exactly N tokens. */
import {expect} from 'chai'
import {join} from 'node:path'
import {pathToFileURL} from 'node:url'
import OpenAI from 'openai'

import {byteTokenId, writeRandomLlamaGguf} from '../../plugins/engine-llama-cpp/src/gguf/random-llama.js'
import {callApi, type RunningService, startService, temporaryDirectory} from '../helpers/service.js'

describe('sampling controls (logit_bias, ignore_eos)', () => {
  let service: RunningService
  let client: OpenAI

  before(async () => {
    const directory = await temporaryDirectory()
    service = await startService()
    client = new OpenAI({apiKey: 'x', baseURL: `${service.url}/v1`, maxRetries: 0})
    // A model that ends its turn straight away, so ignore_eos has something to ignore.
    const path = join(directory, 'terse.gguf')
    await writeRandomLlamaGguf(path, {endOfTurnLogit: 25})
    const family = {model_name: 'terse', model_specs: [{model_format: 'ggufv2', model_size_in_billions: 1, model_uri: pathToFileURL(path).href, quantization: 'f32'}]}
    expect((await callApi(service, 'POST', '/v1/model_registrations/LLM', {model: family, persist: false})).status).to.equal(200)
    expect((await callApi(service, 'POST', '/v1/models', {model_engine: 'llama.cpp', model_name: 'terse'})).status).to.equal(200)
  })

  after(async () => service?.stop())

  const ask = (extra: Record<string, unknown>) =>
    client.chat.completions.create({max_tokens: 12, messages: [{content: 'Hello', role: 'user'}], model: 'terse', temperature: 0, ...extra})

  it('ends at the end of the turn by default, and generates exactly max_tokens with ignore_eos', async () => {
    const natural = await ask({})
    expect(natural.choices[0].finish_reason).to.equal('stop')
    expect(natural.usage!.completion_tokens).to.be.lessThan(12)
    // @ts-expect-error ignore_eos is the vLLM / llama.cpp extension
    const forced = await ask({ignore_eos: true})
    expect(forced.choices[0].finish_reason).to.equal('length')
    expect(forced.usage!.completion_tokens).to.equal(12)
  })

  it('boosts and bans tokens with logit_bias', async () => {
    // Two word pieces, just past the special and byte-fallback tokens.
    const [first, second] = [byteTokenId(255) + 10, byteTokenId(255) + 11]
    // @ts-expect-error ignore_eos is the vLLM / llama.cpp extension
    const boosted = await ask({ignore_eos: true, logit_bias: {[first]: 100}, max_tokens: 4})
    expect(boosted.usage!.completion_tokens).to.equal(4)
    const repeated = boosted.choices[0].message.content!
    // @ts-expect-error ignore_eos is the vLLM / llama.cpp extension
    const swapped = (await ask({ignore_eos: true, logit_bias: {[first]: -100, [second]: 100}, max_tokens: 4})).choices[0].message.content!
    expect(repeated).not.to.equal(swapped)
    expect(swapped).not.to.contain(repeated.slice(0, repeated.length / 4))
  })

  it('names a logit_bias key that is not a token id, or a token the model does not have', async () => {
    const notId = await callApi(service, 'POST', '/v1/chat/completions', {logit_bias: {hello: 5}, messages: [{content: 'hi', role: 'user'}], model: 'terse'})
    expect(notId.status).to.equal(400)
    expect(notId.body.error).to.include({param: 'logit_bias.hello'})
    const outOfRange = await callApi(service, 'POST', '/v1/chat/completions', {logit_bias: {99999999: 5}, messages: [{content: 'hi', role: 'user'}], model: 'terse'})
    expect(outOfRange.status).to.equal(400)
    expect(outOfRange.body.error.message).to.match(/names token 99999999, but this model's vocabulary has \d+ tokens/)
  })
})
