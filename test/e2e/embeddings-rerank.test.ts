/**
 * The embedding and rerank model types on a real `service-local` with generated BERT GGUFs: `/v1/embeddings` through
 * the official `openai` client (checked against the OpenAI API description), `/v1/rerank`, requests sent to a model
 * of the wrong type, and what `servicectl` shows for these types.
 */
import {expect} from 'chai'
import OpenAI from 'openai'

import {Client} from '../../src/client/index.js'
import {assertOpenAiSchema} from '../helpers/conformance.js'
import {buildWordPieceVocabulary} from '../../plugins/engine-llama-cpp/src/gguf/random-bert.js'
import {writeTinyChatModel, writeTinyRetrievalModel} from '../helpers/models.js'
import {callApi, type RunningService, servicectl, startService, temporaryDirectory} from '../helpers/service.js'

const EMBEDDER = 'tiny-embedding'
const RERANKER = 'tiny-rerank'
const CHAT = 'tiny-chat'
/** The generated models read 128 positions; one stays free after the input. */
const MAX_TOKENS = 127

const norm = (vector: number[]) => Math.sqrt(vector.reduce((sum, value) => sum + value * value, 0))
const tokenId = (piece: string) => buildWordPieceVocabulary().findIndex((token) => token.text === piece)

describe('embeddings and rerank (service-local, openai client)', function () {
  let service: RunningService
  let client: OpenAI
  const embed = (body: Record<string, unknown>) => callApi(service, 'POST', '/v1/embeddings', {model: EMBEDDER, ...body})
  const rerank = (body: Record<string, unknown>) => callApi(service, 'POST', '/v1/rerank', {model: RERANKER, ...body})

  before(async function () {
    const directory = await temporaryDirectory()
    service = await startService()
    client = new OpenAI({apiKey: 'any-key-is-ignored', baseURL: `${service.url}/v1`, maxRetries: 0})
    const models = [
      ['embedding', (await writeTinyRetrievalModel(directory, 'embedding', EMBEDDER, {matryoshkaDimensions: [32, 16]})).family, {}],
      ['rerank', (await writeTinyRetrievalModel(directory, 'rerank', RERANKER)).family, {}],
      ['LLM', (await writeTinyChatModel(directory, CHAT)).family, {model_engine: 'llama.cpp', n_ctx: 512}],
    ] as const
    for (const [type, family, launch] of models) {
      expect((await callApi(service, 'POST', `/v1/model_registrations/${type}`, {model: family, persist: false})).status).to.equal(200)
      expect((await callApi(service, 'POST', '/v1/models', {model_name: family.model_name, n_threads: 1, ...launch})).status).to.equal(200)
    }
  })

  after(async () => service?.stop())

  it('lists each model with its type, abilities and type-specific fields', async () => {
    const {body} = await callApi(service, 'GET', '/v1/models')
    assertOpenAiSchema('ListModelsResponse', body)
    const byId = Object.fromEntries(body.data.map((model: {id: string}) => [model.id, model]))
    expect(byId[EMBEDDER]).to.deep.include({dimensions: 64, max_tokens: MAX_TOKENS, model_ability: ['embed'], model_engine: 'llama.cpp', model_size_in_billions: 'none', model_type: 'embedding'})
    expect(byId[RERANKER]).to.deep.include({max_tokens: MAX_TOKENS, model_ability: ['rerank'], model_type: 'rerank'})
    expect(byId[CHAT]).to.deep.include({model_ability: ['chat', 'generate'], model_type: 'LLM'})
  })

  describe('embeddings', () => {
    it('embeds one input into a unit vector, as floats or base64 (which the client decodes by default)', async () => {
      const raw = await embed({encoding_format: 'float', input: 'hello world'})
      expect(raw.status).to.equal(200)
      assertOpenAiSchema('CreateEmbeddingResponse', raw.body)
      expect(raw.body).to.deep.include({model: EMBEDDER, object: 'list', usage: {prompt_tokens: 4, total_tokens: 4}})
      const [vector] = raw.body.data.map((item: {embedding: number[]}) => item.embedding)
      expect(vector).to.have.length(64)
      expect(norm(vector)).to.be.closeTo(1, 1e-6)

      const decoded = await client.embeddings.create({input: 'hello world', model: EMBEDDER})
      expect(decoded.data[0].embedding).to.have.length(64)
      decoded.data[0].embedding.forEach((value, index) => expect(value).to.be.closeTo(vector[index], 1e-6))
      const base64 = await embed({encoding_format: 'base64', input: 'hello world'})
      expect(base64.body.data[0].embedding).to.be.a('string')
      const bytes = Buffer.from(base64.body.data[0].embedding, 'base64')
      expect([...new Float32Array(bytes.buffer, bytes.byteOffset, bytes.length / 4)]).to.deep.equal(decoded.data[0].embedding)
    })

    it('embeds a batch in order, identical inputs alike, and token ids like the text they spell', async () => {
      // Whole words of the generated vocabulary, one token each, between [CLS] and [SEP].
      const {data, usage} = await client.embeddings.create({encoding_format: 'float', input: ['hello world', 'the people and the water', 'hello world'], model: EMBEDDER})
      expect(data.map((item) => item.index)).to.deep.equal([0, 1, 2])
      expect(data[2].embedding).to.deep.equal(data[0].embedding)
      expect(data[1].embedding).to.not.deep.equal(data[0].embedding)
      expect(usage).to.deep.equal({prompt_tokens: 4 + 7 + 4, total_tokens: 15})

      const tokens = [tokenId('▁hello'), tokenId('▁world')]
      const fromTokens = await client.embeddings.create({encoding_format: 'float', input: tokens, model: EMBEDDER})
      expect(fromTokens.data).to.have.length(1)
      fromTokens.data[0].embedding.forEach((value, index) => expect(value).to.be.closeTo(data[0].embedding[index], 1e-6))
      const twoInputs = await client.embeddings.create({encoding_format: 'float', input: [tokens, [tokenId('▁water')]], model: EMBEDDER})
      expect(twoInputs.data).to.have.length(2)
      const mixed = await embed({encoding_format: 'float', input: [tokens, 'hello world']})
      expect(mixed.body.data[0].embedding).to.deep.equal(mixed.body.data[1].embedding)
    })

    it('shortens vectors to the Matryoshka sizes the model allows, and refuses others', async () => {
      const full = (await embed({encoding_format: 'float', input: 'hello world'})).body.data[0].embedding as number[]
      const short = (await client.embeddings.create({dimensions: 32, encoding_format: 'float', input: 'hello world', model: EMBEDDER})).data[0].embedding
      expect(short).to.have.length(32)
      expect(norm(short)).to.be.closeTo(1, 1e-6)
      const scale = norm(full.slice(0, 32))
      short.forEach((value, index) => expect(value).to.be.closeTo(full[index] / scale, 1e-6))
      const refused = await embed({dimensions: 50, input: 'hello world'})
      expect(refused.status).to.equal(400)
      expect(refused.body.error).to.include({param: 'dimensions'})
      expect(refused.body.error.message).to.match(/64-dimensional.*can shorten them to 32, 16; dimensions 50 is not possible/)
    })

    it('refuses empty, too long or foreign inputs with 400 naming the input and the limit', async () => {
      const cases: Array<[unknown, string, RegExp]> = [
        ['', 'input', /`input` is empty/],
        [[], 'input', /must be a string, an array of token ids, or an array of 1 to 2048 inputs/],
        [['fine', '  '], 'input[1]', /`input\[1\]` is empty/],
        ['the '.repeat(200), 'input', new RegExp(`the input is 202 tokens; this model embeds at most ${MAX_TOKENS} tokens`)],
        [['ok', 'the '.repeat(200)], 'input[1]', /input\[1\] is 202 tokens/],
        [[5, 999_999], 'input', /`input\[1\]` is not a token id of this model/],
      ]
      for (const [input, param, message] of cases) {
        const response = await embed({input})
        expect(response.status, JSON.stringify(input).slice(0, 40)).to.equal(400)
        assertOpenAiSchema('ErrorResponse', response.body)
        expect(response.body.error.param).to.equal(param)
        expect(response.body.error.message).to.match(message)
      }

      expect((await embed({input: 'still serving'})).status).to.equal(200)
    })
  })

  describe('rerank', () => {
    const query = 'what is the capital of france'
    const documents = ['paris is the capital of france', 'the cat sat on the mat', 'hello world', 'water is wet']

    it('scores every document, best first, in the Xinference / Jina / Cohere shape', async () => {
      const {body, status} = await rerank({documents, query})
      expect(status).to.equal(200)
      expect(body).to.have.keys('id', 'meta', 'model', 'results', 'usage')
      expect(body.results.map((result: {index: number}) => result.index).sort()).to.deep.equal([0, 1, 2, 3])
      const scores = body.results.map((result: {relevance_score: number}) => result.relevance_score)
      expect(scores).to.deep.equal([...scores].sort((a, b) => b - a))
      for (const result of body.results) {
        expect(result).to.have.keys('document', 'index', 'relevance_score')
        expect(result.document).to.equal(null)
        expect(result.relevance_score).to.be.greaterThan(0).and.lessThan(1)
      }

      expect(body.meta.tokens.input_tokens).to.equal(body.usage.total_tokens).and.be.greaterThan(0)
      const alone = await rerank({documents: [documents[2]], query})
      expect(alone.body.results[0].relevance_score).to.be.closeTo(body.results.find((r: {index: number}) => r.index === 2).relevance_score, 1e-9)
    })

    it('keeps the best top_n, returns documents on request, and takes {text} documents', async () => {
      const all = (await rerank({documents, query})).body.results
      const top = await rerank({documents: documents.map((text) => ({text})), query, return_documents: true, top_n: 2})
      expect(top.body.results).to.deep.equal(all.slice(0, 2).map((result: {index: number}) => ({...result, document: {text: documents[result.index]}})))
      expect((await rerank({documents, query, top_n: 99})).body.results).to.have.length(4)
    })

    it('refuses invalid documents and documents too long to read, with 400 naming them', async () => {
      const cases: Array<[Record<string, unknown>, string, RegExp]> = [
        [{documents: [], query}, 'documents', /non-empty array/],
        [{documents: ['ok', ''], query}, 'documents[1]', /is empty/],
        [{documents: ['ok', 'the '.repeat(200)], query}, 'documents[1]', /at most 127 at a time/],
        [{documents: ['ok'], query, top_n: 0}, 'top_n', /integer >= 1/],
        [{documents: ['ok']}, 'query', /is required/],
      ]
      for (const [body, param, message] of cases) {
        const response = await rerank(body)
        expect(response.status, JSON.stringify(body).slice(0, 60)).to.equal(400)
        expect(response.body.error.param).to.equal(param)
        expect(response.body.error.message).to.match(message)
      }
    })
  })

  describe('client library', () => {
    it('creates embeddings, typed as the route answers them', async () => {
      const inputs = ['hello world', 'the cat sat on the mat']
      const created = await new Client(service.url).model(EMBEDDER).createEmbedding(inputs, {dimensions: 32})
      const raw = await embed({dimensions: 32, encoding_format: 'float', input: inputs})
      expect(created).to.deep.equal(raw.body)
      expect(created.data.map((item) => item.embedding.length)).to.deep.equal([32, 32])
      expect(created.usage.prompt_tokens).to.be.greaterThan(0)
    })

    it('reranks documents (Xinference argument order), typed as the route answers them', async () => {
      const documents = ['paris is the capital of france', 'hello world', 'water is wet']
      const query = 'what is the capital of france'
      const ranked = await new Client(service.url).model(RERANKER).rerank(documents, query, {return_documents: true, top_n: 2})
      const raw = await rerank({documents, query, return_documents: true, top_n: 2})
      expect(ranked.results).to.deep.equal(raw.body.results)
      expect(ranked.results.map((result) => result.document?.text)).to.deep.equal(ranked.results.map((result) => documents[result.index]))
      expect(ranked.meta.tokens.input_tokens).to.be.greaterThan(0)
    })
  })

  describe('model types', () => {
    it('answers a request to a model of the wrong type with 400 saying what the model can do', async () => {
      const cases: Array<[string, Record<string, unknown>, RegExp]> = [
        ['/v1/embeddings', {input: 'x', model: CHAT}, /model tiny-chat \(LLM tiny-chat\) cannot create embeddings; it can: chat, generate/],
        ['/v1/embeddings', {input: 'x', model: RERANKER}, /cannot create embeddings; it can: rerank/],
        ['/v1/chat/completions', {messages: [{content: 'hi', role: 'user'}], model: EMBEDDER}, /model tiny-embedding \(embedding tiny-embedding\) cannot chat; it can: embed/],
        ['/v1/completions', {model: RERANKER, prompt: 'x'}, /cannot complete text; it can: rerank/],
        ['/v1/rerank', {documents: ['x'], model: EMBEDDER, query: 'y'}, /cannot rerank documents; it can: embed/],
        ['/anthropic/v1/messages', {max_tokens: 5, messages: [{content: 'hi', role: 'user'}], model: EMBEDDER}, /cannot chat; it can: embed/],
      ]
      for (const [path, body, message] of cases) {
        const response = await callApi(service, 'POST', path, body)
        expect(response.status, path).to.equal(400)
        expect(response.body.error.message).to.match(message)
        if (path.startsWith('/anthropic')) expect(response.body).to.deep.include({type: 'error'})
      }

      const viaClient = await client.chat.completions.create({messages: [{content: 'hi', role: 'user'}], model: EMBEDDER}).catch((error) => error)
      expect(viaClient).to.be.instanceOf(OpenAI.BadRequestError)
    })

    it('refuses to launch a GGUF without a classification head as a reranker, saying why', async () => {
      const {family} = await writeTinyRetrievalModel(await temporaryDirectory(), 'embedding', 'not-a-reranker')
      expect((await callApi(service, 'POST', '/v1/model_registrations/rerank', {model: family, persist: false})).status).to.equal(200)
      const launched = await callApi(service, 'POST', '/v1/models', {model_name: 'not-a-reranker', n_threads: 1})
      expect(launched.status).to.equal(500)
      expect(launched.body.error.message).to.match(/is not a reranker: llama.cpp ranks with a classification head/)
      expect((await callApi(service, 'GET', '/v1/models/not-a-reranker')).status).to.equal(404)
    })

    it('refuses to launch an embedding model whose registered dimensions its file contradicts, naming both', async () => {
      const {family} = await writeTinyRetrievalModel(await temporaryDirectory(), 'embedding', 'wrong-dimensions')
      expect((await callApi(service, 'POST', '/v1/model_registrations/embedding', {model: {...family, dimensions: 384}, persist: false})).status).to.equal(200)
      const launched = await callApi(service, 'POST', '/v1/models', {model_name: 'wrong-dimensions', n_threads: 1})
      expect(launched.status, JSON.stringify(launched.body)).to.equal(400)
      expect(launched.body.error).to.include({param: 'dimensions'})
      expect(launched.body.error.message).to.contain('dimensions 384').and.to.contain('64-dimensional')
      expect((await callApi(service, 'GET', '/v1/models/wrong-dimensions')).status).to.equal(404)
    })

    it('shows the type-specific columns in servicectl list and registrations', async () => {
      const env = {env: {SERVICE_ENDPOINT: service.url}}
      const listed = (await servicectl(['list'], env)).stdout
      expect(listed).to.match(/^UID\s+Type\s+Name\s+Engine\s+Quantization\s+Dimensions\s+Max tokens\s+Status$/m)
      expect(listed).to.match(/tiny-embedding\s+embedding\s+tiny-embedding\s+llama.cpp\s+f32\s+64\s+127\s+ready/)
      expect(listed).to.match(/^UID\s+Type\s+Name\s+Engine\s+Quantization\s+Max tokens\s+Status$/m)
      expect(listed).to.match(/tiny-rerank\s+rerank\s+tiny-rerank\s+llama.cpp\s+f32\s+127\s+ready/)

      const embeddings = (await servicectl(['registrations', '-t', 'embedding'], env)).stdout
      expect(embeddings.split('\n')[0]).to.match(/^Type\s+Name\s+Language\s+Dimensions\s+Max tokens\s+Is-built-in$/)
      expect(embeddings).to.match(/embedding\s+bge-small-en-v1.5\s+en\s+384\s+512\s+true/)
      expect(embeddings).to.match(/embedding\s+tiny-embedding\s+en\s+64\s+128\s+false/)
      const rerankers = (await servicectl(['registrations', '-t', 'rerank'], env)).stdout
      expect(rerankers.split('\n')[0]).to.match(/^Type\s+Name\s+Language\s+Max tokens\s+Is-built-in$/)
      expect(rerankers).to.match(/rerank\s+bge-reranker-v2-m3\s+en, zh, multilingual\s+8192\s+true/)
      const engines = (await servicectl(['engine', '-n', 'bge-m3'], env)).stdout
      expect(engines).to.match(/bge-m3\s+llama.cpp\s+ggufv2\s+none\s+Q4_K_M/)
    })
  })
})
