/**
 * Embedding and reranking models: `embed` on node-llama-cpp embedding contexts, `rank` on ranking contexts. Each
 * context evaluates one input at a time, so a pool of `n_parallel` contexts (default 1) serves inputs side by side;
 * the inputs of one request are spread over the pool. Every input is checked against the context before any work
 * starts, so a request with one input that is too long fails as a whole with the limit in the message.
 */
import type {LlamaEmbeddingContext, LlamaModel, LlamaRankingContext, Token} from 'node-llama-cpp'
import type {EmbeddingEvent, EmbeddingOperations, EmbeddingPayload, LoadedModel, LoadRequest, Logger, RankEvent, RankPayload, RerankOperations, TextInput} from 'service-toolkit'

import {requestError} from './errors.js'
import {EventQueue} from './event-queue.js'
import {SequencePool} from './sequence-pool.js'

export interface RetrievalOptions {
  model: LlamaModel
  request: LoadRequest
  log: Logger
  threads: number
  contextSize: number
  parallel: number
}

function checkTokens(input: TextInput, vocabularySize: number, param: string): TextInput {
  if (typeof input === 'string') {
    if (input.trim() === '') throw requestError(`\`${param}\` is empty; every input needs some text.`, param)
    return input
  }

  if (input.length === 0) throw requestError(`\`${param}\` is an empty list of tokens.`, param)
  const bad = input.findIndex((token) => !Number.isInteger(token) || token < 0 || token >= vocabularySize)
  if (bad >= 0) throw requestError(`\`${param}[${bad}]\` is not a token id of this model (its vocabulary has ${vocabularySize} tokens).`, param)
  return input
}

const asInput = (input: TextInput) => input as string | Token[]

/** Runs `work` for every item on the pool's contexts, streaming each result as it is ready. */
async function* spread<C, R>(pool: SequencePool<C>, count: number, signal: AbortSignal, work: (context: C, index: number) => Promise<R>): AsyncGenerator<R> {
  const queue = new EventQueue<R>()
  let left = count
  const run = async (index: number) => {
    const context = await pool.acquire(signal)
    try {
      if (signal.aborted) throw signal.reason
      queue.push(await work(context, index))
    } finally {
      pool.release(context)
    }
  }

  for (let index = 0; index < count; index++)
    run(index).then(
      () => --left === 0 && queue.end(),
      (error) => queue.fail(error),
    )
  if (count === 0) queue.end()
  yield* queue
}

function normalized(vector: readonly number[], dimensions: number): number[] {
  const kept = vector.slice(0, dimensions)
  const norm = Math.sqrt(kept.reduce((sum, value) => sum + value * value, 0))
  return norm > 0 ? kept.map((value) => value / norm) : kept
}

export async function loadEmbedder({contextSize, log, model, parallel, request, threads}: RetrievalOptions): Promise<LoadedModel<EmbeddingOperations>> {
  const contexts: LlamaEmbeddingContext[] = []
  // A bidirectional model sees its whole input in one batch, so the batch is as large as the context.
  for (let i = 0; i < parallel; i++) contexts.push(await model.createEmbeddingContext({batchSize: contextSize, contextSize, threads}))
  const pool = new SequencePool(contexts)
  const vocabularySize = model.fileInfo.metadata.tokenizer?.ggml?.tokens?.length ?? Number.POSITIVE_INFINITY
  const native = model.embeddingVectorSize
  const matryoshka = Array.isArray(request.family.matryoshka_dimensions) ? (request.family.matryoshka_dimensions as number[]) : []
  // node-llama-cpp needs one free position after the input.
  const maxTokens = contextSize - 1
  log.info(`loaded ${request.modelPath} for embeddings: ${native} dimensions, inputs up to ${maxTokens} tokens, ${parallel} context(s), ${threads} thread(s)`)

  const embed = (payload: EmbeddingPayload, signal: AbortSignal) =>
    (async function* (): AsyncGenerator<EmbeddingEvent> {
      const dimensions = payload.dimensions ?? native
      if (dimensions !== native && !matryoshka.includes(dimensions))
        throw requestError(
          `this model makes ${native}-dimensional embeddings${matryoshka.length > 0 ? ` and can shorten them to ${matryoshka.join(', ')}` : ' and cannot shorten them'}; dimensions ${dimensions} is not possible.`,
          'dimensions',
        )
      const inputs = payload.inputs.map((input, index) => checkTokens(input, vocabularySize, payload.inputs.length === 1 ? 'input' : `input[${index}]`))
      const lengths = inputs.map((input) => contexts[0].calculateInputLength(asInput(input)))
      const tooLong = lengths.findIndex((length) => length > maxTokens)
      if (tooLong >= 0)
        throw requestError(
          `${inputs.length === 1 ? 'the input' : `input[${tooLong}]`} is ${lengths[tooLong]} tokens; this model embeds at most ${maxTokens} tokens at a time. Shorten or split it.`,
          inputs.length === 1 ? 'input' : `input[${tooLong}]`,
        )
      yield* spread(pool, inputs.length, signal, async (context, index): Promise<EmbeddingEvent> => {
        const {vector} = await context.getEmbeddingFor(asInput(inputs[index]))
        return {index, tokens: lengths[index], type: 'embedding', vector: normalized(vector, dimensions)}
      })
      yield {promptTokens: lengths.reduce((sum, length) => sum + length, 0), type: 'done'}
    })()

  return {
    async dispose() {
      await Promise.all(contexts.map((context) => context.dispose()))
    },
    info: {abilities: ['embed'], contextLength: contextSize, dimensions: native, maxTokens, parallel, threads},
    operations: {embed},
    usage: () => pool.usage(),
  }
}

export async function loadRanker({contextSize, log, model, parallel, request, threads}: RetrievalOptions): Promise<LoadedModel<RerankOperations>> {
  if (!model.fileInsights.supportsRanking)
    throw new Error(
      `${request.modelPath} is not a reranker: llama.cpp ranks with a classification head (cls or cls.output tensors) and a separator or end token, which this file lacks. Launch it as an embedding model instead.`,
    )
  const contexts: LlamaRankingContext[] = []
  for (let i = 0; i < parallel; i++) contexts.push(await model.createRankingContext({batchSize: contextSize, contextSize, threads}))
  const pool = new SequencePool(contexts)
  const vocabularySize = model.fileInfo.metadata.tokenizer?.ggml?.tokens?.length ?? Number.POSITIVE_INFINITY
  const maxTokens = contextSize - 1
  log.info(`loaded ${request.modelPath} for reranking: query and document up to ${maxTokens} tokens together, ${parallel} context(s), ${threads} thread(s)`)

  const rank = (payload: RankPayload, signal: AbortSignal) =>
    (async function* (): AsyncGenerator<RankEvent> {
      const query = checkTokens(payload.query, vocabularySize, 'query')
      const documents = payload.documents.map((document, index) => checkTokens(document, vocabularySize, `documents[${index}]`))
      const lengths = documents.map((document) => contexts[0].calculateInputLength(asInput(query), asInput(document)))
      const tooLong = lengths.findIndex((length) => length > maxTokens)
      if (tooLong >= 0)
        throw requestError(
          `the query and documents[${tooLong}] are ${lengths[tooLong]} tokens together; this model reads at most ${maxTokens} at a time. Shorten the document or split it into passages.`,
          `documents[${tooLong}]`,
        )
      yield* spread(pool, documents.length, signal, async (context, index): Promise<RankEvent> => ({
        index,
        score: await context.rank(asInput(query), asInput(documents[index])),
        tokens: lengths[index],
        type: 'score',
      }))
      yield {promptTokens: lengths.reduce((sum, length) => sum + length, 0), type: 'done'}
    })()

  return {
    async dispose() {
      await Promise.all(contexts.map((context) => context.dispose()))
    },
    info: {abilities: ['rerank'], contextLength: contextSize, maxTokens, parallel, threads},
    operations: {rank},
    usage: () => pool.usage(),
  }
}
