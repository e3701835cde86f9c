/**
 * The OpenAI-compatible API of a real `service-local` process, driven with the official `openai` client,
 * on a generated GGUF model; every response and stream chunk is checked against the OpenAI API description.
 */
import {expect} from 'chai'
import {readFile, writeFile} from 'node:fs/promises'
import {join} from 'node:path'
import OpenAI from 'openai'

import {assertOpenAiSchema} from '../helpers/conformance.js'
import {buildVocabulary} from '../../plugins/engine-llama-cpp/src/gguf/tokenizer.js'
import {writeTinyChatModel} from '../helpers/models.js'
import {childPids} from '../helpers/processes.js'
import {callApi, type RunningService, startService, temporaryDirectory, until} from '../helpers/service.js'

const MODEL = 'tiny-chat'

const api = callApi

describe('OpenAI API (service-local, openai client)', function () {
  let service: RunningService
  let client: OpenAI

  before(async function () {
    const directory = await temporaryDirectory()
    const {family} = await writeTinyChatModel(directory, MODEL)
    service = await startService()
    client = new OpenAI({apiKey: 'any-key-is-ignored', baseURL: `${service.url}/v1`, maxRetries: 0})
    expect((await api(service, 'POST', '/v1/model_registrations/LLM', {model: JSON.stringify(family), persist: true})).status).to.equal(200)
    const launched = await api(service, 'POST', '/v1/models', {
      model_engine: 'llama.cpp',
      model_format: 'ggufv2',
      model_name: MODEL,
      model_size_in_billions: '0_5',
      n_ctx: 1024,
      n_parallel: 4,
      n_threads: 1,
      quantization: 'q4_0',
    })
    expect(launched).to.deep.equal({body: {model_uid: MODEL}, status: 200})
  })

  after(async () => service?.stop())

  describe('models', () => {
    it('lists the running model in the OpenAI shape, with type, engine, format, size, quantization and status', async () => {
      const {body} = await api(service, 'GET', '/v1/models')
      assertOpenAiSchema('ListModelsResponse', body)
      const models = await client.models.list()
      expect(models.data.map((m) => m.id)).to.deep.equal([MODEL])
      expect(body.data[0]).to.include({
        model_engine: 'llama.cpp',
        model_format: 'ggufv2',
        model_name: MODEL,
        model_size_in_billions: '0_5',
        model_type: 'LLM',
        object: 'model',
        quantization: 'q4_0',
        status: 'ready',
      })
      expect(body.data[0].engine_parameters).to.deep.equal({n_ctx: 1024, n_parallel: 4, n_threads: 1})
      expect(body.data[0].context_length).to.be.at.least(1024)
    })

    it('runs the model in a process of its own, started with the environment its engine declares', async () => {
      const {pid} = (await api(service, 'GET', `/v1/models/${MODEL}`)).body
      expect(pid).to.be.a('number').and.not.equal(service.process.pid)
      const environment = (await readFile(`/proc/${pid}/environ`, 'utf8')).split('\0')
      expect(environment).to.include('UV_THREADPOOL_SIZE=1')
    })

    it('describes one model and answers 404 for an unknown uid', async () => {
      expect((await api(service, 'GET', `/v1/models/${MODEL}`)).body).to.include({id: MODEL, model_type: 'LLM'})
      const missing = await api(service, 'GET', '/v1/models/nope')
      expect(missing.status).to.equal(404)
      assertOpenAiSchema('ErrorResponse', missing.body)
      expect(missing.body.error.message).to.contain('Running models: tiny-chat')
    })
  })

  describe('chat completions', () => {
    it('answers in the OpenAI shape with real token counts', async () => {
      const completion = await client.chat.completions.create({max_tokens: 12, messages: [{content: 'Say something.', role: 'user'}], model: MODEL, temperature: 0})
      assertOpenAiSchema('CreateChatCompletionResponse', completion)
      expect(completion.id).to.match(/^chatcmpl-/)
      expect(completion.object).to.equal('chat.completion')
      expect(completion.model).to.equal(MODEL)
      expect(completion.choices[0].message.role).to.equal('assistant')
      expect(completion.choices[0].message.content).to.be.a('string').and.not.equal('')
      expect(completion.choices[0].finish_reason).to.equal('length')
      expect(completion.usage!.completion_tokens).to.equal(12)
      expect(completion.usage!.prompt_tokens).to.be.greaterThan(5)
      expect(completion.usage!.total_tokens).to.equal(completion.usage!.prompt_tokens + 12)
    })

    it('streams chunks that concatenate to the non-streamed answer, ending with usage and [DONE]', async () => {
      const request = {max_completion_tokens: 16, messages: [{content: 'Tell me a story.', role: 'user' as const}], model: MODEL, temperature: 0}
      const whole = await client.chat.completions.create(request)
      const stream = await client.chat.completions.create({...request, stream: true, stream_options: {include_usage: true}})
      const chunks = []
      for await (const chunk of stream) chunks.push(chunk)
      for (const chunk of chunks) assertOpenAiSchema('CreateChatCompletionStreamResponse', chunk)
      expect(chunks[0].choices[0].delta.role).to.equal('assistant')
      expect(new Set(chunks.map((c) => c.id)).size).to.equal(1)
      const text = chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')
      expect(text).to.equal(whole.choices[0].message.content)
      const last = chunks.at(-1)!
      expect(last.choices).to.deep.equal([])
      // The same prompt again: all of it but its last token comes from the sequence the first request left.
      expect(last.usage).to.deep.equal({...whole.usage, prompt_tokens_details: {cached_tokens: whole.usage!.prompt_tokens - 1}})
      expect(chunks.at(-2)!.choices[0].finish_reason).to.equal('length')
    })

    it('ends the raw SSE stream with data: [DONE]', async () => {
      const response = await fetch(`${service.url}/v1/chat/completions`, {
        body: JSON.stringify({max_tokens: 3, messages: [{content: 'hi', role: 'user'}], model: MODEL, stream: true}),
        headers: {'content-type': 'application/json'},
        method: 'POST',
      })
      expect(response.headers.get('content-type')).to.contain('text/event-stream')
      const body = await response.text()
      expect(body.trimEnd().endsWith('data: [DONE]')).to.equal(true)
    })

    it('is reproducible with a seed, and stops at a stop sequence', async () => {
      const request = {max_tokens: 20, messages: [{content: 'Hello', role: 'user' as const}], model: MODEL, seed: 42, temperature: 0.9}
      const first = await client.chat.completions.create(request)
      const second = await client.chat.completions.create(request)
      expect(second.choices[0].message.content).to.equal(first.choices[0].message.content)
      const greedy = (await client.chat.completions.create({...request, seed: undefined, temperature: 0})).choices[0].message.content!
      const stopAt = greedy.trim().split(/\s+/)[1]
      const stopped = await client.chat.completions.create({...request, seed: undefined, stop: [stopAt], temperature: 0})
      expect(stopped.choices[0].finish_reason).to.equal('stop')
      expect(stopped.choices[0].message.content).to.equal(greedy.slice(0, greedy.indexOf(stopAt)))
    })

    it('accepts content given as text parts, penalties, top_p and top_k', async () => {
      const completion = await client.chat.completions.create({
        frequency_penalty: 0.5,
        max_tokens: 4,
        messages: [
          {content: 'You are terse.', role: 'system'},
          {content: [{text: 'Hi', type: 'text'}, {text: 'there', type: 'text'}], role: 'user'},
        ],
        model: MODEL,
        presence_penalty: 0.5,
        top_p: 0.9,
        // @ts-expect-error top_k is an extension the peers accept
        top_k: 20,
      })
      expect(completion.usage!.completion_tokens).to.equal(4)
    })

    it('serves more concurrent streams than parallel sequences, each one complete', async () => {
      const run = async (index: number) => {
        const stream = await client.chat.completions.create({max_tokens: 8, messages: [{content: `Request ${index}`, role: 'user'}], model: MODEL, stream: true, stream_options: {include_usage: true}})
        let usage
        for await (const chunk of stream) usage = chunk.usage ?? usage
        return usage
      }

      const usages = await Promise.all(Array.from({length: 6}, (_, i) => run(i)))
      for (const usage of usages) expect(usage!.completion_tokens).to.equal(8)
    })

    it('stops generating when the client disconnects mid-stream', async () => {
      const log = join(service.home, 'logs/models', `${MODEL}.log`)
      const before = (await readFile(log, 'utf8')).split('\n').filter((line) => line.includes('request finished: abort')).length
      const controller = new AbortController()
      const stream = await client.chat.completions.create(
        {max_tokens: 900, messages: [{content: 'Go on forever.', role: 'user'}], model: MODEL, stream: true},
        {signal: controller.signal},
      )
      try {
        for await (const chunk of stream) if (chunk.choices[0]?.delta.content) controller.abort()
      } catch (error) {
        expect((error as Error).name).to.match(/Abort/)
      }

      const aborted = await until(async () => {
        const lines = (await readFile(log, 'utf8')).split('\n').filter((line) => line.includes('request finished: abort'))
        return lines.length > before ? lines.at(-1) : undefined
      }, 'the model to log the aborted request')
      const generated = Number(/\+ (\d+) generated/.exec(aborted)![1])
      expect(generated).to.be.lessThan(900)
    })
  })

  describe('completions', () => {
    it('completes a prompt, streaming or not, with echo', async () => {
      const completion = await client.completions.create({max_tokens: 5, model: MODEL, prompt: 'Once upon a time', temperature: 0})
      assertOpenAiSchema('CreateCompletionResponse', completion)
      expect(completion.usage!.completion_tokens).to.equal(5)
      const echoed = await client.completions.create({echo: true, max_tokens: 5, model: MODEL, prompt: 'Once upon a time', temperature: 0})
      expect(echoed.choices[0].text).to.equal('Once upon a time' + completion.choices[0].text)
      const stream = await client.completions.create({max_tokens: 5, model: MODEL, prompt: 'Once upon a time', stream: true, temperature: 0})
      let text = ''
      for await (const chunk of stream) text += chunk.choices[0]?.text ?? ''
      expect(text).to.equal(completion.choices[0].text)
    })

    it('defaults to 16 tokens as OpenAI does', async () => {
      const completion = await client.completions.create({model: MODEL, prompt: 'A', temperature: 0})
      expect(completion.usage!.completion_tokens).to.be.at.most(16)
    })

    it('answers several prompts with one choice each, in prompt order, streaming or not', async () => {
      const prompts = ['Once upon a time', 'Hello world', 'The water']
      const single = await Promise.all(prompts.map(async (prompt) => (await client.completions.create({max_tokens: 4, model: MODEL, prompt, temperature: 0})).choices[0].text))
      const batch = await client.completions.create({max_tokens: 4, model: MODEL, prompt: prompts, temperature: 0})
      assertOpenAiSchema('CreateCompletionResponse', batch)
      expect(batch.choices.map((choice) => choice.index)).to.deep.equal([0, 1, 2])
      expect(batch.choices.map((choice) => choice.text)).to.deep.equal(single)
      expect(batch.usage!.completion_tokens).to.equal(12)

      const texts = ['', '', '']
      const finished: number[] = []
      for await (const chunk of await client.completions.create({max_tokens: 4, model: MODEL, prompt: prompts, stream: true, stream_options: {include_usage: true}, temperature: 0})) {
        // The description has no stream type for this route and types finish_reason as non-null; OpenAI's own
        // stream sends null until a choice ends, so only the chunks that end choices (and the usage chunk) are checked.
        if (chunk.choices.every((choice) => choice.finish_reason)) assertOpenAiSchema('CreateCompletionResponse', chunk)
        for (const choice of chunk.choices) {
          texts[choice.index] += choice.text
          if (choice.finish_reason) finished.push(choice.index)
        }

        if (chunk.usage) {
          // Which cached prefix each prompt reuses depends on the sequence it lands in, which is a matter of timing.
          expect({...chunk.usage, prompt_tokens_details: undefined}).to.deep.equal({...batch.usage, prompt_tokens_details: undefined})
          expect(chunk.usage.prompt_tokens_details!.cached_tokens).to.be.within(0, chunk.usage.prompt_tokens)
        }
      }

      expect(texts).to.deep.equal(single)
      expect(finished.sort()).to.deep.equal([0, 1, 2])
    })

    it('takes prompts as token ids as given, one list or several, and echoes them as text', async () => {
      // " Hello world" is "▁Hello", "▁world" in the generated vocabulary (see plugins/engine-llama-cpp/src/gguf/tokenizer.ts);
      // the engine puts <s> before text, and takes token ids as they are, as vLLM and llama-server do.
      const vocabulary = buildVocabulary(512).map((token) => token.text)
      const ids = [vocabulary.indexOf('▁Hello'), vocabulary.indexOf('▁world')]
      const withBos = [vocabulary.indexOf('<s>'), ...ids]
      const text = await client.completions.create({max_tokens: 3, model: MODEL, prompt: ' Hello world', temperature: 0})
      expect(text.usage!.prompt_tokens).to.equal(3)
      const tokens = await client.completions.create({max_tokens: 3, model: MODEL, prompt: withBos, temperature: 0})
      expect(tokens.choices).to.have.length(1)
      expect(tokens.choices[0].text).to.equal(text.choices[0].text)
      expect(tokens.usage).to.deep.equal({...text.usage, prompt_tokens_details: {cached_tokens: text.usage!.prompt_tokens - 1}})
      // Penalties once took node-llama-cpp's LlamaCompletion, which puts <s> before token ids too.
      for (const penalties of [{}, {frequency_penalty: 0.5, presence_penalty: 0.5}]) {
        const bare = await client.completions.create({echo: true, max_tokens: 3, model: MODEL, prompt: ids, temperature: 0, ...penalties})
        expect(bare.usage!.prompt_tokens, JSON.stringify(penalties)).to.equal(2)
        expect(bare.choices[0].text.startsWith('Hello world')).to.equal(true)
      }

      const several = await client.completions.create({max_tokens: 2, model: MODEL, prompt: [ids, ids.slice(0, 1)], temperature: 0})
      expect(several.choices.map((choice) => choice.index)).to.deep.equal([0, 1])
      expect(several.usage!.prompt_tokens).to.equal(2 + 1)
      const mixed = await api(service, 'POST', '/v1/completions', {max_tokens: 3, model: MODEL, prompt: [withBos, ' Hello world'], temperature: 0})
      expect(mixed.body.choices.map((choice: {text: string}) => choice.text)).to.deep.equal([text.choices[0].text, text.choices[0].text])

      const refused = await api(service, 'POST', '/v1/completions', {model: MODEL, prompt: [1, 99_999]})
      expect(refused.status).to.equal(400)
      expect(refused.body.error.message).to.match(/prompt\[1\] is not a token id of this model \(its vocabulary has 512 tokens\)/)
      const suffix = await api(service, 'POST', '/v1/completions', {model: MODEL, prompt: 'a', suffix: 'b'})
      expect(suffix.status).to.equal(400)
      expect(suffix.body.error).to.include({param: 'suffix'})
    })
  })

  describe('errors', () => {
    const chat = (body: unknown) => api(service, 'POST', '/v1/chat/completions', body)

    it('answers an unknown model with 404 in the OpenAI envelope, through the client too', async () => {
      const error = await client.chat.completions.create({messages: [{content: 'hi', role: 'user'}], model: 'missing'}).catch((e) => e)
      expect(error).to.be.instanceOf(OpenAI.NotFoundError)
      expect(error.message).to.contain('model "missing" is not running')
    })

    it('answers malformed requests with 400 naming the field, never 500', async () => {
      const cases: Array<[unknown, string, RegExp]> = [
        ['{"model": "tiny-chat", "messages": [', '', /not valid JSON/],
        [{messages: [{content: 'hi', role: 'user'}]}, 'model', /`model` is required/],
        [{model: MODEL}, 'messages', /`messages` is required/],
        [{messages: [], model: MODEL}, 'messages', /non-empty array/],
        [{messages: [{content: 'hi', role: 'bot'}], model: MODEL}, 'messages[0].role', /one of system, developer, user, assistant, tool/],
        [{messages: [{content: 'hi', role: 'user'}], model: MODEL, temperature: 'hot'}, 'temperature', /number between 0 and 2/],
        [{max_tokens: 0, messages: [{content: 'hi', role: 'user'}], model: MODEL}, 'max_tokens', /integer between 1 and 2147483647/],
        [{max_token: 5, messages: [{content: 'hi', role: 'user'}], model: MODEL}, 'max_token', /not a known field/],
        [{messages: [{content: 'hi', role: 'user'}], model: MODEL, n: 2}, 'n', /`n` is not supported: one choice is generated per request; leave it out or set it to 1, and send several requests/],
        [[1, 2], '', /must be a JSON object/],
      ]
      for (const [body, param, message] of cases) {
        const response = await chat(body)
        expect(response.status, JSON.stringify(body)).to.equal(400)
        assertOpenAiSchema('ErrorResponse', response.body)
        expect(response.body.error.message).to.match(message)
        expect(response.body.error.type).to.equal('invalid_request_error')
        if (param) expect(response.body.error.param).to.equal(param)
      }
    })

    it('refuses a prompt longer than the context with 400 and OpenAI\'s context_length_exceeded, and keeps serving', async () => {
      const long = 'word '.repeat(3000)
      const overflow = {code: 'context_length_exceeded', type: 'invalid_request_error'}
      const response = await chat({messages: [{content: long, role: 'user'}], model: MODEL})
      expect(response.status).to.equal(400)
      expect(response.body.error).to.include({...overflow, param: 'messages'})
      expect(response.body.error.message).to.match(/context.*--n_ctx/)
      // A stream is refused the same way, before it starts, rather than with an error inside a 200 stream.
      const streamed = await chat({messages: [{content: long, role: 'user'}], model: MODEL, stream: true})
      expect(streamed.status).to.equal(400)
      expect(streamed.body.error).to.include({...overflow, param: 'messages'})
      expect(streamed.body.error.message).to.match(/context.*--n_ctx/)
      const completion = await api(service, 'POST', '/v1/completions', {model: MODEL, prompt: long})
      expect(completion.status).to.equal(400)
      expect(completion.body.error).to.include({...overflow, param: 'prompt'})
      // What the OpenAI client libraries read to tell an overflow from other refusals.
      const error = await client.chat.completions.create({messages: [{content: long, role: 'user'}], model: MODEL}).catch((e) => e)
      expect(error).to.be.instanceOf(OpenAI.BadRequestError)
      expect(error.code).to.equal('context_length_exceeded')
      expect((await chat({max_tokens: 2, messages: [{content: 'hi', role: 'user'}], model: MODEL})).status).to.equal(200)
    })

    it('answers unknown routes with 404 and wrong methods with 405', async () => {
      expect((await api(service, 'GET', '/v1/nothing-here')).status).to.equal(404)
      const wrongMethod = await api(service, 'PUT', '/v1/chat/completions', {})
      expect(wrongMethod.status).to.equal(405)
      expect(wrongMethod.body.error.message).to.contain('HTTP method')
      expect(wrongMethod.body.error.message).to.contain('it takes POST')
      expect((await fetch(`${service.url}/v1/chat/completions`, {method: 'PUT'})).headers.get('allow')).to.equal('POST')
    })
  })

  describe('launch and terminate', () => {
    const launch = (body: Record<string, unknown>) => api(service, 'POST', '/v1/models', {model_name: MODEL, n_threads: 1, ...body})

    it('names the field and the allowed values when a launch does not match', async () => {
      const cases: Array<[Record<string, unknown>, string, RegExp]> = [
        [{}, 'model_engine', /model_engine is required for LLM models; choose one of: llama.cpp/],
        [{model_engine: 'lmdeploy'}, 'model_engine', /"lmdeploy" is not installed; choose one of: llama.cpp/],
        [{model_engine: 'vllm'}, 'model_engine', /^engine "vllm" cannot run tiny-chat: .* the engines that can run it: llama\.cpp\.$/],
        [{model_engine: 'llama.cpp', model_name: 'no-such-model'}, 'model_name', /not in the catalogue/],
        [{model_engine: 'llama.cpp', model_format: 'pytorch'}, 'model_format', /choose one of: ggufv2/],
        [{model_engine: 'llama.cpp', size_in_billions: 7}, 'size_in_billions', /choose one of: 0_5/],
        [{model_engine: 'llama.cpp', quantization: 'q8_0'}, 'quantization', /choose one of: q4_0/],
        [{model_engine: 'llama.cpp', model_uid: MODEL}, 'model_uid', /already in use/],
        [{model_engine: 'llama.cpp', model_uid: 'x', n_ctxx: 5}, 'n_ctxx', /unknown parameter "n_ctxx".*accepts: .*n_ctx/],
        [{model_engine: 'llama.cpp', model_uid: 'x', n_ctx: 'big'}, 'n_ctx', /`n_ctx` must be an integer >= 16/],
        [{model_engine: 'llama.cpp', model_uid: 'bad uid'}, 'model_uid', /matching/],
      ]
      for (const [body, param, message] of cases) {
        const response = await launch(body)
        expect(response.status, JSON.stringify(body)).to.equal(400)
        expect(response.body.error.param, JSON.stringify(body)).to.equal(param)
        expect(response.body.error.message).to.match(message)
      }

      expect((await api(service, 'GET', '/v1/models')).body.data.map((m: {id: string}) => m.id)).to.deep.equal([MODEL])
    })

    it('refuses replica: 1000 before placement, starting no model process', async () => {
      const before = await childPids(service.process.pid!)
      const response = await launch({model_engine: 'llama.cpp', model_uid: 'thousand', replica: 1000})
      expect(response.status).to.equal(400)
      expect(response.body.error.param).to.equal('replica')
      expect(response.body.error.message).to.contain('128')
      expect(await childPids(service.process.pid!)).to.deep.equal(before)
      expect((await api(service, 'GET', '/v1/models')).body.data.map((m: {id: string}) => m.id)).to.deep.equal([MODEL])
    })

    it('accepts Xinference client fields, and a second launch of the same model gets its own uid', async () => {
      const response = await launch({
        gpu_idx: null,
        model_engine: 'LLAMA.CPP',
        model_type: 'LLM',
        n_gpu: 'auto',
        peft_model_config: null,
        replica: 1,
        request_limits: null,
        size_in_billions: 0.5,
        worker_ip: null,
      })
      expect(response.status).to.equal(200)
      expect(response.body.model_uid).to.match(/^tiny-chat-[0-9a-f]{8}$/)
      expect((await api(service, 'DELETE', `/v1/models/${response.body.model_uid}`)).status).to.equal(200)
    })

    it('terminates a model: its process exits, and the uid is free again', async () => {
      expect((await launch({model_engine: 'llama.cpp', model_uid: 'short-lived'})).status).to.equal(200)
      const {pid} = (await api(service, 'GET', '/v1/models/short-lived')).body
      expect(pid).to.be.a('number')
      expect((await api(service, 'DELETE', '/v1/models/short-lived')).status).to.equal(200)
      expect(() => process.kill(pid, 0)).to.throw(/ESRCH/)
      expect((await api(service, 'DELETE', '/v1/models/short-lived')).status).to.equal(404)
      expect((await launch({model_engine: 'llama.cpp', model_uid: 'short-lived'})).status).to.equal(200)
      expect((await api(service, 'DELETE', '/v1/models/short-lived')).status).to.equal(200)
    })

    it('reports a crashed model process on the model, fails its requests fast, and keeps serving', async () => {
      expect((await launch({model_engine: 'llama.cpp', model_uid: 'doomed'})).status).to.equal(200)
      const {pid} = (await api(service, 'GET', '/v1/models/doomed')).body
      process.kill(pid, 'SIGKILL')
      const described = await until(async () => {
        const {body} = await api(service, 'GET', '/v1/models/doomed')
        return body.status === 'error' ? body : undefined
      }, 'the crash to be reported')
      expect(described.error).to.contain('killed by SIGKILL')
      const response = await api(service, 'POST', '/v1/chat/completions', {messages: [{content: 'hi', role: 'user'}], model: 'doomed'})
      expect(response.status).to.equal(503)
      expect(response.body.error.message).to.match(/killed by SIGKILL.*terminate it and launch it again/)
      expect((await api(service, 'POST', '/v1/chat/completions', {max_tokens: 2, messages: [{content: 'hi', role: 'user'}], model: MODEL})).status).to.equal(200)
      expect((await api(service, 'DELETE', '/v1/models/doomed')).status).to.equal(200)
    })

    it('reports a model file that cannot be loaded, says why, and leaves no uid behind', async () => {
      const directory = await temporaryDirectory()
      const {ggufPath} = await writeTinyChatModel(directory, 'whole')
      const whole = await readFile(ggufPath)
      const cases: Array<[string, Buffer, number, RegExp]> = [
        ['not-gguf', Buffer.from('GGUF but not really'), 400, /not-gguf.gguf is not a GGUF file llama.cpp can read: it is of a GGUF version llama.cpp does not read/],
        ['truncated', whole.subarray(0, 2000), 400, /truncated.gguf is not a GGUF file llama.cpp can read: it is incomplete or damaged/],
        ['cut-short', whole.subarray(0, Math.floor(whole.length * 0.7)), 400, /cut-short.gguf is not a GGUF file llama.cpp can read: it is incomplete or damaged/],
      ]
      for (const [name, content, status, message] of cases) {
        const path = join(directory, `${name}.gguf`)
        await writeFile(path, content)
        const family = {model_name: name, model_specs: [{model_format: 'ggufv2', model_size_in_billions: 1, model_uri: `file://${path}`, quantization: 'q4_0'}]}
        expect((await api(service, 'POST', '/v1/model_registrations/LLM', {model: family, persist: false})).status).to.equal(200)
        const response = await api(service, 'POST', '/v1/models', {model_engine: 'llama.cpp', model_name: name})
        expect(response.status, `${name}: ${response.body.error?.message}`).to.equal(status)
        expect(response.body.error.code).to.equal('launch_failed')
        expect(response.body.error.message).to.match(new RegExp(`^failed to launch ${name}: `))
        expect(response.body.error.message).to.match(message)
        expect((await api(service, 'GET', `/v1/models/${name}`)).status).to.equal(404)
        expect((await api(service, 'DELETE', `/v1/model_registrations/LLM/${name}`)).status).to.equal(200)
      }
    })
  })

  describe('catalogue and reference', () => {
    it('lists built-in and custom registrations, and refuses to unregister a built-in', async () => {
      const {body} = await api(service, 'GET', '/v1/model_registrations/LLM')
      expect(body).to.deep.include({is_builtin: true, model_name: 'qwen2.5-instruct'})
      expect(body).to.deep.include({is_builtin: false, model_name: MODEL})
      const family = (await api(service, 'GET', '/v1/model_registrations/LLM/qwen2.5-instruct')).body
      expect(family.model_specs.length).to.be.greaterThan(0)
      const refused = await api(service, 'DELETE', '/v1/model_registrations/LLM/qwen2.5-instruct')
      expect(refused.status).to.equal(400)
      expect(refused.body.error.message).to.contain('built-in')
      expect((await api(service, 'GET', '/v1/model_registrations/LLM/nope')).status).to.equal(404)
      expect((await api(service, 'GET', '/v1/model_registrations/nope')).status).to.equal(400)
    })

    it('rejects invalid registrations with the reason', async () => {
      const cases: Array<[unknown, RegExp]> = [
        [{model: '{not json'}, /not valid JSON/],
        [{model: {model_name: 'x y', model_specs: []}}, /model_name must be/],
        [{model: {model_name: 'no-specs', model_specs: []}}, /model_specs must be a non-empty array/],
        [{model: {model_name: 'unsized', model_specs: [{model_format: 'ggufv2', quantization: 'q4_0'}]}}, /model_specs\[0\].model_size_in_billions is required for LLM models/],
        [{model: {model_name: 'gone', model_specs: [{model_format: 'ggufv2', model_size_in_billions: 1, model_uri: 'file:///no/such/file.gguf', quantization: 'q4_0'}]}}, /model_specs\[0\].model_uri \(file:\/\/\/no\/such\/file.gguf\) cannot be used/],
        [{model: {model_name: 'qwen2.5-instruct', model_specs: [{model_format: 'ggufv2', model_size_in_billions: 1, quantization: 'q4_0'}]}}, /conflicts with the built-in/],
      ]
      for (const [body, message] of cases) {
        const response = await api(service, 'POST', '/v1/model_registrations/LLM', body)
        expect(response.status, JSON.stringify(body)).to.equal(400)
        expect(response.body.error.message).to.match(message)
      }
    })

    it('tells which engines, formats, sizes and quantizations a model launches with', async () => {
      const {body} = await api(service, 'GET', '/v1/engines/qwen2.5-instruct')
      const sizes = body['llama.cpp'].map((spec: {model_size_in_billions: string}) => spec.model_size_in_billions)
      expect(sizes).to.include.members(['0_5', '1_5', '7'])
      expect(body['llama.cpp'][0].quantizations).to.include('q4_k_m')
    })

    it('serves the API reference at /docs and the OpenAPI document at /openapi.json', async () => {
      const document = (await api(service, 'GET', '/openapi.json')).body
      expect(document.openapi).to.equal('3.1.0')
      expect(document.paths['/v1/chat/completions'].post.requestBody.content['application/json'].schema.required).to.deep.equal(['messages', 'model'])
      expect(document.paths['/v1/models/{model_uid}'].delete['x-permission']).to.equal('models:stop')
      const page = await fetch(`${service.url}/docs`)
      expect(page.headers.get('content-type')).to.contain('text/html')
      expect(await page.text()).to.contain('/v1/chat/completions')
    })
  })
})
