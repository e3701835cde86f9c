import {describe, it, before, after} from 'mocha'
import {expect} from 'chai'
import {mkdtemp, readdir, readFile, rm, stat} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import path from 'node:path'
import {
  getLlama,
  LlamaChat,
  LlamaLogLevel,
  LlamaVocabularyType,
  readGgufFileInfo,
  resolveChatWrapper,
  TokenBias,
  type ChatHistoryItem,
  type Llama,
  type LlamaModel,
  type Token,
} from 'node-llama-cpp'
import {
  CHATML_TEMPLATE,
  RANDOM_LLAMA_TOKENS,
  RANDOM_LLAMA_SIZES,
  byteTokenId,
  writeRandomLlamaGguf,
  type RandomLlamaGguf,
  type RandomLlamaOptions,
} from '../../plugins/engine-llama-cpp/src/gguf/random-llama.js'

const tiny = RANDOM_LLAMA_SIZES.tiny

// node-llama-cpp defaults to more threads than a 2-core CI runner has cores; on a model this small the threads then
// spend their time waiting on each other (measured: ~260 ms per token with the default 4 threads, ~0.5 ms with 1).
const THREADS = 1

const HISTORY: ChatHistoryItem[] = [
  {type: 'system', text: 'You are a test model.'},
  {type: 'user', text: 'Say something.'},
  {type: 'model', response: []},
]

describe('generated random-weight llama GGUF models', function () {
  this.timeout(30_000)

  let dir: string
  let llama: Llama
  let file: RandomLlamaGguf
  let model: LlamaModel

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'gguf-test-'))
    llama = await getLlama({gpu: false, build: 'never', logLevel: LlamaLogLevel.error})
    file = await writeRandomLlamaGguf(path.join(dir, 'tiny.gguf'))
    model = await llama.loadModel({modelPath: file.filePath})
  })

  after(async () => {
    await model?.dispose()
    await llama?.dispose()
    if (dir !== undefined)
      await rm(dir, {recursive: true, force: true})
  })

  /** Runs `body` with `model` swapped for a tiny model generated with `options`. */
  async function withModel<T>(options: RandomLlamaOptions, body: () => Promise<T>): Promise<T> {
    const {filePath} = await writeRandomLlamaGguf(path.join(dir, `variant-${JSON.stringify(options).replace(/\W+/g, '_')}.gguf`), options)
    const original = model
    model = await llama.loadModel({modelPath: filePath})
    try {
      return await body()
    } finally {
      await model.dispose()
      model = original
    }
  }

  /** One chat turn on a fresh context, reporting what was generated and what the token meter counted. */
  async function generate(options: {temperature?: number; seed?: number; maxTokens?: number; tokenBias?: (model: LlamaModel) => TokenBias} = {}) {
    const context = await model.createContext({contextSize: 512, threads: THREADS})
    try {
      const sequence = context.getSequence()
      const chat = new LlamaChat({contextSequence: sequence})
      const tokens: Token[] = []
      const result = await chat.generateResponse(HISTORY, {
        maxTokens: options.maxTokens ?? 16,
        temperature: options.temperature ?? 0,
        seed: options.seed,
        tokenBias: options.tokenBias?.(model),
        onToken: (chunk) => tokens.push(...chunk),
      })
      return {
        text: result.response,
        stopReason: result.metadata.stopReason,
        tokens,
        inputTokens: sequence.tokenMeter.usedInputTokens,
        outputTokens: sequence.tokenMeter.usedOutputTokens,
      }
    } finally {
      await context.dispose()
    }
  }

  describe('the file', () => {
    it('has the tiny shape and a size of a few hundred KB', async () => {
      const {embeddingLength: d, blockCount, headCount, headCountKv, feedForwardLength: ff, vocabSize} = tiny
      const kv = (d / headCount) * headCountKv
      const perBlock = 2 * d + 2 * d * d + 2 * d * kv + 3 * d * ff
      expect(file.vocabSize).to.equal(vocabSize)
      expect(file.parameters).to.equal(2 * vocabSize * d + blockCount * perBlock + d)
      expect(file.bytes).to.equal((await stat(file.filePath)).size)
      expect(file.bytes).to.be.within(file.parameters * 4, 1024 * 1024)
    })

    it('is byte-identical for the same options and differs for another seed', async () => {
      const again = await writeRandomLlamaGguf(path.join(dir, 'tiny-again.gguf'))
      const reseeded = await writeRandomLlamaGguf(path.join(dir, 'tiny-seed-7.gguf'), {seed: 7})
      const original = await readFile(file.filePath)
      expect((await readFile(again.filePath)).equals(original)).to.equal(true)
      expect((await readFile(reseeded.filePath)).equals(original)).to.equal(false)
      expect(reseeded.bytes).to.equal(file.bytes)
    })

    it('has the metadata and tensor layout of a converted llama model', async () => {
      const info = await readGgufFileInfo(file.filePath, {logWarnings: false})
      const metadata = info.metadata as any
      expect(info.version).to.equal(3)
      expect(metadata.general).to.include({architecture: 'llama', name: 'random-llama-tiny', file_type: 0, alignment: 32})
      expect(metadata.llama).to.include({
        vocab_size: tiny.vocabSize,
        context_length: tiny.contextLength,
        embedding_length: tiny.embeddingLength,
        block_count: tiny.blockCount,
        feed_forward_length: tiny.feedForwardLength,
      })
      expect(metadata.llama.attention).to.include({head_count: tiny.headCount, head_count_kv: tiny.headCountKv})
      expect(metadata.llama.attention.layer_norm_rms_epsilon).to.be.closeTo(1e-5, 1e-9)
      expect(metadata.llama.rope).to.deep.equal({dimension_count: tiny.embeddingLength / tiny.headCount, freq_base: 10_000})

      const tokenizer = metadata.tokenizer
      expect(tokenizer.ggml).to.include({model: 'llama', bos_token_id: 1, eos_token_id: RANDOM_LLAMA_TOKENS.imEnd, add_bos_token: true})
      expect(tokenizer.chat_template).to.equal(CHATML_TEMPLATE)
      expect(tokenizer.ggml.tokens).to.have.length(tiny.vocabSize)
      expect(tokenizer.ggml.tokens.slice(0, 5)).to.deep.equal(['<unk>', '<s>', '</s>', '<|im_start|>', '<|im_end|>'])
      expect(tokenizer.ggml.token_type.slice(0, 5)).to.deep.equal([2, 3, 3, 3, 3])
      expect(tokenizer.ggml.tokens[byteTokenId(0x00)]).to.equal('<0x00>')
      expect(tokenizer.ggml.tokens[byteTokenId(0xff)]).to.equal('<0xFF>')
      expect(tokenizer.ggml.token_type[byteTokenId(0x41)]).to.equal(6)
      expect(tokenizer.ggml.tokens).to.include.members(['▁', '▁the', '▁hello', 'a', 'Z', '7', '?'])

      const tensors = new Map(info.tensorInfo!.map((tensor) => [tensor.name, tensor]))
      const {embeddingLength: d, feedForwardLength: ff} = tiny
      const kv = (d / tiny.headCount) * tiny.headCountKv
      const expectedShapes: Record<string, number[]> = {
        'token_embd.weight': [d, tiny.vocabSize],
        'output_norm.weight': [d],
        'output.weight': [d, tiny.vocabSize],
      }
      for (let block = 0; block < tiny.blockCount; block++) {
        Object.assign(expectedShapes, {
          [`blk.${block}.attn_norm.weight`]: [d],
          [`blk.${block}.attn_q.weight`]: [d, d],
          [`blk.${block}.attn_k.weight`]: [d, kv],
          [`blk.${block}.attn_v.weight`]: [d, kv],
          [`blk.${block}.attn_output.weight`]: [d, d],
          [`blk.${block}.ffn_norm.weight`]: [d],
          [`blk.${block}.ffn_gate.weight`]: [d, ff],
          [`blk.${block}.ffn_up.weight`]: [d, ff],
          [`blk.${block}.ffn_down.weight`]: [ff, d],
        })
      }
      expect([...tensors.keys()].sort()).to.deep.equal(Object.keys(expectedShapes).sort())
      for (const [name, shape] of Object.entries(expectedShapes)) {
        expect(tensors.get(name)!.dimensions.map(Number), name).to.deep.equal(shape)
        expect(tensors.get(name)!.ggmlType, name).to.equal(0)
        expect(Number(tensors.get(name)!.fileOffset) % 32, name).to.equal(0)
      }
    })

    it('can be written concurrently, even to the same path, without leftovers', async () => {
      const concurrentDir = await mkdtemp(path.join(dir, 'concurrent-'))
      const targets = ['a', 'b', 'c', 'c'].map((name) => path.join(concurrentDir, `${name}.gguf`))
      const written = await Promise.all(targets.map((target, i) => writeRandomLlamaGguf(target, {seed: i === 3 ? 2 : i})))
      expect((await readdir(concurrentDir)).sort()).to.deep.equal(['a.gguf', 'b.gguf', 'c.gguf'])
      for (const {filePath} of written.slice(0, 3)) {
        const loaded = await llama.loadModel({modelPath: filePath})
        await loaded.dispose()
      }
    })

    it('stores no chat template when chatTemplate is null', async () => {
      const {filePath} = await writeRandomLlamaGguf(path.join(dir, 'no-template.gguf'), {chatTemplate: null})
      const info = await readGgufFileInfo(filePath, {readTensorInfo: false, logWarnings: false})
      expect((info.metadata as any).tokenizer.chat_template).to.equal(undefined)
    })

    it('can store the weight matrices as F16, at about half the size', async () => {
      const half = await withModel({weightType: 'f16'}, async () => {
        expect(model.fileInfo.metadata.general.file_type).to.equal(1)
        return generate({maxTokens: 8})
      })
      expect(half.tokens).to.have.length(8)
      const {bytes} = await writeRandomLlamaGguf(path.join(dir, 'tiny-f16.gguf'), {weightType: 'f16'})
      expect(bytes).to.be.within(file.bytes * 0.45, file.bytes * 0.6)
    })

    it('pads or trims the vocabulary without moving the special and byte tokens', async () => {
      for (const vocabSize of [400, 3000]) {
        const {filePath, vocabSize: actual} = await writeRandomLlamaGguf(path.join(dir, `vocab-${vocabSize}.gguf`), {vocabSize})
        expect(actual).to.equal(vocabSize)
        const info = await readGgufFileInfo(filePath, {readTensorInfo: false, logWarnings: false})
        const tokens: string[] = (info.metadata as any).tokenizer.ggml.tokens
        expect(tokens).to.have.length(vocabSize)
        expect(new Set(tokens).size).to.equal(vocabSize)
        expect(tokens[RANDOM_LLAMA_TOKENS.imEnd]).to.equal('<|im_end|>')
        expect(tokens[byteTokenId(0x0a)]).to.equal('<0x0A>')
      }
    })
  })

  describe('in node-llama-cpp', () => {
    it('loads as an SPM llama model with the expected special tokens', () => {
      expect(model.vocabularyType).to.equal(LlamaVocabularyType.spm)
      expect(model.trainContextSize).to.equal(tiny.contextLength)
      expect(model.tokens.bos).to.equal(RANDOM_LLAMA_TOKENS.bos)
      expect(model.tokens.eos).to.equal(RANDOM_LLAMA_TOKENS.eos)
      expect(model.tokens.eosString).to.equal('<|im_end|>')
      expect(model.tokens.nl).to.equal(byteTokenId(0x0a))
    })

    it('round-trips arbitrary text through tokenize and detokenize', () => {
      const texts = [
        '',
        'hello world',
        'Hello, World! The model was here.',
        '  two leading spaces, two  inner, trailing ',
        'tabs\tand\r\nnewlines\n\n',
        'Ünïcödé — “quotes”, 日本語, Ελληνικά, עברית',
        'emoji 🤖👍🏽 and a ZWJ family 👩‍👩‍👧',
        'control \u0000\u0001\u007f bytes',
        '<|im_start|>user looks special but is plain text<|im_end|>',
        '1234567890 {"json": [1, 2.5, null]}',
      ]
      for (const text of texts)
        expect(model.detokenize(model.tokenize(text)), JSON.stringify(text)).to.equal(text)
    })

    it('tokenizes known words as single pieces and the rest through byte fallback', () => {
      expect(model.tokenize('hello world').map((token) => model.detokenize([token], true))).to.deep.equal(['hello', 'world'])

      const tokens = model.tokenize('日') as number[]
      const bytes = [...Buffer.from('日', 'utf8')]
      expect(tokens.slice(-3)).to.deep.equal(bytes.map(byteTokenId))

      expect(model.tokenize('<|im_start|>', true)).to.deep.equal([RANDOM_LLAMA_TOKENS.imStart])
      expect(model.tokenize('<|im_start|>', false)).to.not.include(RANDOM_LLAMA_TOKENS.imStart)
    })

    it('uses the chat template stored in the file', async () => {
      const wrapper = resolveChatWrapper(model)
      expect(wrapper.wrapperName).to.equal('ChatML')
      const prompt = wrapper.generateContextState({chatHistory: HISTORY}).contextText.toString()
      expect(prompt).to.contain('<|im_start|>system\nYou are a test model.<|im_end|>\n<|im_start|>user\nSay something.<|im_end|>')
      expect(prompt).to.match(/<\|im_start\|>assistant\n$/)

      // A template node-llama-cpp does not know is rendered from the file as-is.
      const custom =
        "{% for message in messages %}[{{ message['role'] }}] {{ message['content'] }}<|im_end|>\n{% endfor %}" +
        '{% if add_generation_prompt %}[assistant] {% endif %}'
      const {filePath} = await writeRandomLlamaGguf(path.join(dir, 'custom-template.gguf'), {chatTemplate: custom})
      const customModel = await llama.loadModel({modelPath: filePath})
      try {
        const customWrapper = resolveChatWrapper(customModel)
        expect(customWrapper.wrapperName).to.equal('JinjaTemplate')
        expect(customWrapper.generateContextState({chatHistory: HISTORY}).contextText.toString())
          .to.contain('[user] Say something.<|im_end|>\n[assistant] ')
      } finally {
        await customModel.dispose()
      }
    })

    it('generates a response with real token counts', async () => {
      const result = await generate({maxTokens: 16})
      expect(result.stopReason).to.equal('maxTokens')
      expect(result.tokens).to.have.length(16)
      expect(result.outputTokens).to.equal(16)
      expect(result.inputTokens).to.be.greaterThan(model.tokenize('You are a test model. Say something.').length)
      expect(result.text.trim()).to.not.equal('')
      expect(result.text).to.equal(model.detokenize(result.tokens).trimStart())
    })

    it('decodes greedily into varied text without ending the turn by itself', async () => {
      const {tokens, stopReason} = await generate({maxTokens: 32})
      expect(stopReason).to.equal('maxTokens')
      expect(new Set(tokens).size).to.be.at.least(8)
      expect(tokens).to.not.include(RANDOM_LLAMA_TOKENS.eos)
    })

    it('is deterministic for greedy decoding and for a fixed sampling seed', async () => {
      const greedy = await generate({temperature: 0})
      expect((await generate({temperature: 0})).tokens).to.deep.equal(greedy.tokens)

      const sampled = await generate({temperature: 1, seed: 1234})
      expect((await generate({temperature: 1, seed: 1234})).tokens).to.deep.equal(sampled.tokens)
      expect((await generate({temperature: 1, seed: 4321})).tokens).to.not.deep.equal(sampled.tokens)
    })

    it('gives special and byte tokens a logit of exactly 0 and spreads the word pieces around it', async () => {
      const context = await model.createContext({contextSize: 512, threads: THREADS})
      try {
        const input = model.tokenize('Hello world, the model is here.')
        const outputs = await context.getSequence().controlledEvaluate([...input.slice(0, -1), [input.at(-1)!, {generateNext: {logits: true}}]])
        const logits = outputs.at(-1)!.next.logits!
        expect(logits.size).to.equal(tiny.vocabSize)
        const words: number[] = []
        for (const [token, logit] of logits) {
          if (token <= byteTokenId(0xff))
            expect(logit, `token ${token}`).to.equal(0)
          else
            words.push(logit)
        }
        const mean = words.reduce((sum, logit) => sum + logit, 0) / words.length
        const std = Math.sqrt(words.reduce((sum, logit) => sum + (logit - mean) ** 2, 0) / words.length)
        expect(std).to.be.within(2, 4)
        expect(Math.max(...words)).to.be.greaterThan(5)
      } finally {
        await context.dispose()
      }
    })

    it('ends its turn by itself only when endOfTurnLogit asks it to', async () => {
      const eager = await withModel({endOfTurnLogit: 25}, () => generate({maxTokens: 16}))
      expect(eager).to.deep.include({stopReason: 'eogToken', text: '', tokens: []})
      expect(eager.outputTokens).to.equal(1) // the token meter counts the sampled <|im_end|>

      const eventually = await withModel({endOfTurnLogit: 6}, () => generate({maxTokens: 64}))
      expect(eventually.stopReason).to.equal('eogToken')
      expect(eventually.tokens.length).to.be.within(1, 63)

      // node-llama-cpp's TokenBias skips end-of-generation tokens, so this cannot replace the option.
      const biased = await generate({tokenBias: (model) => new TokenBias(model.tokenizer).set(RANDOM_LLAMA_TOKENS.eos as Token, {logit: 100})})
      expect(biased.stopReason).to.equal('maxTokens')
    })
  })
})
