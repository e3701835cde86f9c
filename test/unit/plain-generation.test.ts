import {expect} from 'chai'
import {join} from 'node:path'

import {BatchGatherer} from '../../plugins/engine-llama-cpp/src/batch-gatherer.js'
import {continuedTextCallbacks} from '../../plugins/engine-llama-cpp/src/continuation.js'
import {
  generatePlain,
  plainGenerationSupport,
  type PlainOutcome,
  type PlainSupport,
  type RepeatPenalty,
  StopMatcher,
  templateStops,
} from '../../plugins/engine-llama-cpp/src/plain-generation.js'
import {writeRandomLlamaGguf} from '../../plugins/engine-llama-cpp/src/gguf/random-llama.js'
import {temporaryDirectory} from '../helpers/service.js'

describe('stop matcher', () => {
  it('emits text up to the earliest stop and holds back what could still become one', () => {
    const matcher = new StopMatcher([
      {requested: true, text: 'END'},
      {requested: false, text: '<|im_end|>'},
    ])
    expect(matcher.push('Hello <|im')).to.deep.equal({text: 'Hello '})
    expect(matcher.push('_e')).to.deep.equal({text: ''})
    expect(matcher.push('x E')).to.deep.equal({text: '<|im_ex '})
    expect(matcher.push('NDING')).to.deep.equal({stop: {requested: true, text: 'END'}, text: ''})
    expect(matcher.push('a <|im_end|> b END')).to.deep.equal({stop: {requested: false, text: '<|im_end|>'}, text: 'a '})
    expect(matcher.push('tail E')).to.deep.equal({text: 'tail '})
    expect(matcher.flush(), 'held text is released when generation ends otherwise').to.equal('E')
  })
})

describe('plain generation on node-llama-cpp', function () {
  this.timeout(60_000)
  type Loaded = Awaited<ReturnType<typeof load>>
  let loaded: Loaded

  async function load() {
    const directory = await temporaryDirectory()
    const {filePath} = await writeRandomLlamaGguf(join(directory, 'tiny.gguf'))
    const {getLlama, LlamaChat, LlamaCompletion, resolveChatWrapper, TokenBias} = await import('node-llama-cpp')
    const llama = await getLlama({build: 'never', gpu: false})
    const model = await llama.loadModel({modelPath: filePath})
    const context = await model.createContext({contextSize: 512, sequences: 2, threads: 1})
    const [reference, plain] = [context.getSequence(), context.getSequence()]
    const gatherer = BatchGatherer.install(context) as BatchGatherer
    const support = (await plainGenerationSupport(plain)) as PlainSupport
    const wrapper = resolveChatWrapper(model)!
    const endOfGeneration = new TokenBias(model.tokenizer)
    for (let token = 0; token < model.fileInfo.metadata.tokenizer.ggml.tokens.length; token++)
      if (model.isEogToken(token as never)) (endOfGeneration as unknown as {_biases: Map<number, number>})._biases.set(token, -Infinity)
    return {context, endOfGeneration, gatherer, llama, LlamaChat, LlamaCompletion, model, plain, reference, support, wrapper}
  }

  before(async () => {
    loaded = await load()
  })

  after(async () => {
    loaded.gatherer.dispose()
    await loaded.context.dispose()
    await loaded.model.dispose()
    await loaded.llama.dispose()
  })

  async function viaPlain(
    prompt: readonly number[],
    options: {maxTokens: number; stop?: string[]; banEnd?: boolean; templateStops?: ReturnType<typeof templateStops>; continues?: boolean; repeatPenalty?: RepeatPenalty},
  ) {
    let text = ''
    const outcome: PlainOutcome = await generatePlain(
      loaded.model,
      loaded.plain,
      loaded.support,
      {
        continues: options.continues,
        maxTokens: options.maxTokens,
        prompt: prompt as never,
        sampling: {repeatPenalty: options.repeatPenalty, temperature: 0, tokenBias: options.banEnd ? loaded.endOfGeneration : undefined},
        stopTexts: [...(options.stop ?? []).map((stop) => ({requested: true, text: stop})), ...(options.templateStops?.texts ?? [])],
        stopTokens: new Set(options.templateStops?.tokens ?? []),
      },
      new AbortController().signal,
      (event) => {
        if (event.type === 'text') text += event.text
      },
    )
    return {outcome, text}
  }

  async function viaLlamaChat(question: string, options: {maxTokens: number; stop?: string[]; banEnd?: boolean; repeatPenalty?: RepeatPenalty}) {
    const {LlamaChat, reference, wrapper} = loaded
    const chat = new LlamaChat({autoDisposeSequence: false, chatWrapper: wrapper, contextSequence: reference})
    let text = ''
    const result = await chat.generateResponse([{text: question, type: 'user'}, {response: [], type: 'model'}], {
      customStopTriggers: options.stop,
      maxTokens: options.maxTokens,
      onTextChunk: (chunk) => (text += chunk),
      repeatPenalty: options.repeatPenalty,
      temperature: 0,
      tokenBias: options.banEnd ? loaded.endOfGeneration : undefined,
    })
    return {stopReason: result.metadata.stopReason, text}
  }

  it('writes what LlamaChat writes, to the token limit and to a stop text, and reuses the prompt it holds', async () => {
    const {model, wrapper} = loaded
    const question = 'Tell me about the sea'
    const state = wrapper.generateContextState({chatHistory: [{text: question, type: 'user'}, {response: [], type: 'model'}]})
    const prompt = state.contextText.tokenize(model.tokenizer)
    const stops = templateStops(model, state.stopGenerationTriggers)
    expect(stops, 'the test template ends on single special tokens and text').to.not.equal(undefined)

    const expected = await viaLlamaChat(question, {banEnd: true, maxTokens: 40})
    const plain = await viaPlain(prompt, {banEnd: true, maxTokens: 40, templateStops: stops})
    expect(plain.text).to.equal(expected.text)
    expect(plain.outcome).to.deep.equal({finishReason: 'length', stopReason: 'maxTokens'})
    expect(expected.stopReason).to.equal('maxTokens')

    const stop = expected.text.slice(12, 16)
    const stopped = await viaLlamaChat(question, {banEnd: true, maxTokens: 40, stop: [stop]})
    const again = await viaPlain(prompt, {banEnd: true, maxTokens: 40, stop: [stop], templateStops: stops})
    expect(again.text).to.equal(stopped.text)
    expect(again.text).to.equal(expected.text.slice(0, expected.text.indexOf(stop)))
    expect(again.outcome).to.deep.equal({finishReason: 'stop', stopReason: 'customStopTrigger', stopSequence: stop})
    expect(loaded.plain.contextTokens.slice(0, prompt.length), 'the sequence holds the prompt for the next request').to.deep.equal(prompt)
  })

  it('ends on a stop token with the text it held back for a stop text that did not come', async () => {
    const {model, wrapper} = loaded
    const state = wrapper.generateContextState({chatHistory: [{text: 'Name a bird', type: 'user'}, {response: [], type: 'model'}]})
    const prompt = state.contextText.tokenize(model.tokenizer)
    await viaPlain(prompt, {banEnd: true, maxTokens: 24})
    const generated = loaded.plain.contextTokens.slice(prompt.length)
    // The first token, after a few, that the model has not generated before: ending on it ends there.
    const at = generated.findIndex((token, index) => index >= 3 && !generated.slice(0, index).includes(token))
    expect(at, 'some token comes for the first time').to.be.greaterThan(0)
    const before = await viaPlain(prompt, {banEnd: true, maxTokens: at})
    const ended = await viaPlain(prompt, {banEnd: true, maxTokens: 40, stop: [before.text.slice(-2) + '\u0001'], templateStops: {texts: [], tokens: [generated[at]]}})
    expect(ended.outcome).to.deep.equal({finishReason: 'stop', stopReason: 'eogToken'})
    expect(ended.text).to.equal(before.text)
  })

  it('hands its first text on before it asks for the next decode', async () => {
    const {model, wrapper} = loaded
    const state = wrapper.generateContextState({chatHistory: [{text: 'Say something', type: 'user'}, {response: [], type: 'model'}]})
    const sequence = loaded.plain as unknown as {_decodeTokens(...args: unknown[]): Promise<unknown>}
    const decode = sequence._decodeTokens
    const order: string[] = []
    sequence._decodeTokens = function (...args) {
      order.push('decode')
      return decode.apply(this, args)
    }

    try {
      await generatePlain(
        model,
        loaded.plain,
        loaded.support,
        {maxTokens: 12, prompt: state.contextText.tokenize(model.tokenizer), sampling: {temperature: 0, tokenBias: loaded.endOfGeneration}, stopTexts: [], stopTokens: new Set()},
        new AbortController().signal,
        (event) => {
          if (event.type !== 'text' || order.includes('text')) return
          order.push('text')
          // What carries it to the model process's outbox (the event queue, two generators) takes a few promise steps.
          void (async () => {
            for (let step = 0; step < 20; step++) await undefined
            order.push('passed on')
          })()
        },
      )
    } finally {
      delete (sequence as {_decodeTokens?: unknown})._decodeTokens
    }

    const first = order.indexOf('text')
    expect(first, 'some text came before the last token').to.be.within(1, order.lastIndexOf('decode') - 1)
    expect(order.slice(first, first + 3)).to.deep.equal(['text', 'passed on', 'decode'])
  })

  it('continues a prefill as LlamaChat does, keeping the space between the prefill and its first word', async () => {
    const {LlamaChat, model, reference, wrapper} = loaded
    // The model's first token after this prefill is "▁has": a word of its own, after a space.
    const history = [{text: 'Hello!', type: 'user' as const}, {response: ['Sure'], type: 'model' as const}]
    const prompt = wrapper.generateContextState({chatHistory: history}).contextText.tokenize(model.tokenizer)
    const plain = await viaPlain(prompt, {banEnd: true, continues: true, maxTokens: 10})
    // The sequence holds every generated token but the last, which was sampled and never decoded.
    const generated = loaded.plain.contextTokens.slice(prompt.length)
    expect(plain.text.startsWith(model.detokenize(generated, false, prompt.slice(-4)))).to.equal(true)
    expect(plain.text).to.match(/^ \S/)

    let viaChat = ''
    const chat = new LlamaChat({autoDisposeSequence: false, chatWrapper: wrapper, contextSequence: reference})
    const callbacks = continuedTextCallbacks(model, prompt, (text) => (viaChat += text))
    await chat.generateResponse(history, {...callbacks, maxTokens: 10, temperature: 0, tokenBias: loaded.endOfGeneration})
    expect(viaChat).to.equal(plain.text)
  })

  it('writes what LlamaCompletion writes after a text prompt', async () => {
    const {LlamaCompletion, model, reference} = loaded
    const completion = new LlamaCompletion({contextSequence: reference})
    let expected = ''
    await completion.generateCompletion('Once upon a time', {maxTokens: 30, onTextChunk: (chunk) => (expected += chunk), temperature: 0, tokenBias: loaded.endOfGeneration})
    const prompt = [model.tokens.bos!, ...model.tokenize('Once upon a time', false, 'trimLeadingSpace')]
    const plain = await viaPlain(prompt, {banEnd: true, maxTokens: 30})
    expect(plain.text).to.equal(expected)
  })

  it('penalizes presence and frequency as LlamaChat and LlamaCompletion do', async () => {
    const {LlamaCompletion, model, reference, wrapper} = loaded
    const repeatPenalty = {frequencyPenalty: 1.5, lastTokens: 64, penalty: 1, presencePenalty: 1.5}
    const question = 'Tell me about the sea'
    const state = wrapper.generateContextState({chatHistory: [{text: question, type: 'user'}, {response: [], type: 'model'}]})
    const prompt = state.contextText.tokenize(model.tokenizer)
    const stops = templateStops(model, state.stopGenerationTriggers)
    const chatted = await viaLlamaChat(question, {banEnd: true, maxTokens: 40, repeatPenalty})
    const plain = await viaPlain(prompt, {banEnd: true, maxTokens: 40, repeatPenalty, templateStops: stops})
    expect(plain.text).to.equal(chatted.text)
    expect(plain.text, 'the penalty changes the answer').to.not.equal((await viaPlain(prompt, {banEnd: true, maxTokens: 40, templateStops: stops})).text)

    const completion = new LlamaCompletion({contextSequence: reference})
    let completed = ''
    await completion.generateCompletion('Once upon a time', {maxTokens: 30, onTextChunk: (chunk) => (completed += chunk), repeatPenalty, temperature: 0, tokenBias: loaded.endOfGeneration})
    const text = [model.tokens.bos!, ...model.tokenize('Once upon a time', false, 'trimLeadingSpace')]
    expect((await viaPlain(text, {banEnd: true, maxTokens: 30, repeatPenalty})).text).to.equal(completed)
  })
})
