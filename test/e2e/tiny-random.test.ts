/**
 * The catalogue's random-weight models on a real `service-local` that cannot reach any hub: `servicectl launch` makes
 * their GGUF files on first launch, the official `openai` client chats (streaming) and embeds with them, `/v1/rerank`
 * ranks with them, and the cache keeps them like downloaded models (listed, reused, removable).
 */
import {expect} from 'chai'
import {readFile, stat} from 'node:fs/promises'
import {join} from 'node:path'
import OpenAI from 'openai'

import {callApi, closedPort, type RunningService, servicectl, startService} from '../helpers/service.js'

const LLM_VERSION = 'tiny-random-llm--0_0001B--ggufv2--f32'
const EMBEDDING_VERSION = 'tiny-random-embedding--ggufv2--f32'

describe('tiny-random catalogue models (service-local with no network, servicectl, openai client)', function () {
  let service: RunningService
  let client: OpenAI
  const cli = (args: string[], input?: string) => servicectl(args, {env: {SERVICE_ENDPOINT: service.url}, input})
  const llmFile = () => join(service.home, 'cache', LLM_VERSION, 'tiny-random-llm-f32.gguf')
  const generations = async (modelName: string) =>
    (await readFile(join(service.home, 'logs', 'service-local.log'), 'utf8')).split('\n').filter((line) => line.includes(`generated ${modelName} (`)).length

  before(async () => {
    // Every hub points at a closed port: anything that tried to download would fail.
    const unreachable = `http://127.0.0.1:${await closedPort()}`
    service = await startService({env: {HF_ENDPOINT: unreachable, MODELSCOPE_ENDPOINT: unreachable}})
    client = new OpenAI({apiKey: 'not-needed', baseURL: `${service.url}/v1`, maxRetries: 0})
  })

  after(async () => service?.stop())

  it('launches tiny-random-llm with no -f/-s/-q and chats with it through the openai client, streaming', async () => {
    const launched = await cli(['launch', '-n', 'tiny-random-llm', '--model-engine', 'llama.cpp'])
    expect(launched.exitCode, launched.stderr).to.equal(0)
    expect(launched.stdout).to.contain('Model uid: tiny-random-llm')

    const stream = await client.chat.completions.create({
      max_tokens: 12,
      messages: [{content: 'Hello!', role: 'user'}],
      model: 'tiny-random-llm',
      stream: true,
    })
    let text = ''
    let finish: string | null | undefined
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? ''
      finish = chunk.choices[0]?.finish_reason ?? finish
    }

    expect(text.trim()).to.not.equal('')
    expect(finish).to.equal('length')

    const cached = await cli(['cached'])
    expect(cached.stdout).to.match(new RegExp(`${LLM_VERSION}\\s+generated\\s+tiny-random-llama\\s+\\S+ kB\\s+complete\\s`))
  })

  it('reuses the generated file on the next launch instead of making it again', async () => {
    const made = (await stat(llmFile())).mtimeMs
    expect((await cli(['terminate', '--model-uid', 'tiny-random-llm'])).exitCode).to.equal(0)
    const again = await cli(['launch', '-n', 'tiny-random-llm', '--model-engine', 'llama.cpp', '-u', 'second'])
    expect(again.exitCode, again.stderr).to.equal(0)
    expect((await stat(llmFile())).mtimeMs).to.equal(made)
    expect(await generations('tiny-random-llm')).to.equal(1)
    const reply = await client.chat.completions.create({max_tokens: 4, messages: [{content: 'Hi', role: 'user'}], model: 'second'})
    expect(reply.choices[0].finish_reason).to.equal('length')
  })

  it('embeds with tiny-random-embedding and ranks with tiny-random-rerank', async () => {
    for (const [name, type] of [['tiny-random-embedding', 'embedding'], ['tiny-random-rerank', 'rerank']]) {
      const launched = await cli(['launch', '-n', name, '-t', type])
      expect(launched.exitCode, launched.stderr).to.equal(0)
    }

    const embedded = await client.embeddings.create({input: ['The food was delicious', 'The waiter was friendly'], model: 'tiny-random-embedding'})
    expect(embedded.data.map((item) => item.embedding.length)).to.deep.equal([64, 64])

    const ranked = await callApi(service, 'POST', '/v1/rerank', {documents: ['Paris is in France.', 'Cats sleep a lot.'], model: 'tiny-random-rerank', query: 'Where is Paris?'})
    expect(ranked.status).to.equal(200)
    expect(ranked.body.results.map((result: {index: number}) => result.index).sort()).to.deep.equal([0, 1])
    for (const result of ranked.body.results) expect(result.relevance_score).to.be.within(0, 1)
  })

  it('removes a generated model with remove-cache, and makes the same bytes again on the next launch', async () => {
    const manifest = async () => JSON.parse(await readFile(join(service.home, 'cache', EMBEDDING_VERSION, 'manifest.json'), 'utf8'))
    const before = await manifest()
    expect(before).to.include({hub: 'generated', repo: 'tiny-random-bert-embedding'})
    expect((await cli(['terminate', '--model-uid', 'tiny-random-embedding'])).exitCode).to.equal(0)
    const removed = await cli(['remove-cache', '-n', EMBEDDING_VERSION, '--check'])
    expect(removed.exitCode, removed.stderr).to.equal(0)
    expect((await cli(['cached'])).stdout).to.not.contain(EMBEDDING_VERSION)

    expect((await cli(['launch', '-n', 'tiny-random-embedding', '-t', 'embedding'])).exitCode).to.equal(0)
    expect(await generations('tiny-random-embedding')).to.equal(2)
    expect((await manifest()).files).to.deep.equal(before.files)
  })
})
