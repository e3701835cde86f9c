import {expect} from 'chai'
import {mkdtemp, rm} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import path from 'node:path'
import {getLlama, type Llama, LlamaLogLevel, LlamaVocabularyType} from 'node-llama-cpp'

import {RANDOM_BERT_TOKENS, writeRandomBertGguf} from '../../plugins/engine-llama-cpp/src/gguf/random-bert.js'

describe('generated random-weight BERT GGUF models', function () {
  this.timeout(30_000)
  let dir: string
  let llama: Llama

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'bert-test-'))
    llama = await getLlama({build: 'never', gpu: false, logLevel: LlamaLogLevel.error})
  })

  after(async () => {
    await llama?.dispose()
    if (dir !== undefined) await rm(dir, {force: true, recursive: true})
  })

  it('writes an embedding model that llama.cpp loads as a WordPiece BERT and embeds with', async () => {
    const file = await writeRandomBertGguf(path.join(dir, 'embedding.gguf'))
    expect(file).to.include({contextLength: 128, embeddingLength: 64})
    expect(file.bytes).to.be.lessThan(500_000)
    const model = await llama.loadModel({modelPath: file.filePath})
    try {
      expect(model.vocabularyType).to.equal(LlamaVocabularyType.wpm)
      expect(model.tokens.bos).to.equal(RANDOM_BERT_TOKENS.cls)
      expect(model.tokenize('Hello, world!').includes(RANDOM_BERT_TOKENS.unk)).to.equal(false)
      expect(model.fileInsights.supportsRanking).to.equal(false)
      const context = await model.createEmbeddingContext({threads: 1})
      const [a, again, other] = [await context.getEmbeddingFor('hello world'), await context.getEmbeddingFor('hello world'), await context.getEmbeddingFor('the cat sat down')]
      expect(a.vector).to.have.length(64)
      expect(again.vector).to.deep.equal(a.vector)
      expect(a.calculateCosineSimilarity(other)).to.be.lessThan(0.99)
      // [CLS] hello world [SEP]
      expect(context.calculateInputLength('hello world')).to.equal(4)
    } finally {
      await model.dispose()
    }
  })

  it('writes a reranker with the classification head node-llama-cpp ranks with, scores spread over (0, 1)', async () => {
    const file = await writeRandomBertGguf(path.join(dir, 'reranker.gguf'), {kind: 'reranker'})
    const model = await llama.loadModel({modelPath: file.filePath})
    try {
      expect(model.fileInsights.supportsRanking).to.equal(true)
      const context = await model.createRankingContext({threads: 1})
      const scores = await context.rankAll('what is the capital of france', ['paris is the capital', 'the cat sat', 'hello world', 'water is wet'])
      for (const score of scores) expect(score).to.be.greaterThan(0).and.lessThan(1)
      expect(Math.max(...scores) - Math.min(...scores)).to.be.greaterThan(0.05)
      expect(await context.rank('what is the capital of france', 'the cat sat')).to.equal(scores[1])
    } finally {
      await model.dispose()
    }
  })
})
