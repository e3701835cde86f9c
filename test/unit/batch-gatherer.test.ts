import {expect} from 'chai'
import {join} from 'node:path'

import {BatchGatherer, type GathererTimers} from '../../plugins/engine-llama-cpp/src/batch-gatherer.js'
import {writeRandomLlamaGguf} from '../../plugins/engine-llama-cpp/src/gguf/random-llama.js'
import {temporaryDirectory} from '../helpers/service.js'

/**
 * A context whose batches finish when the test says, recording which sequences each batch carried, how many
 * tokens of each, and where in its sequence each part starts.
 */
function fakeContext(batchSize = 8) {
  const calls: number[] = []
  const sizes: number[] = []
  const starts: number[] = []
  let batch: {resolve(): void; reject(error: unknown): void} | undefined
  let inBatch: number[] = []
  const context = {
    _ctx: {
      addToBatch(sequenceId: number, first: number, tokens: Uint32Array, logitIndexes: Uint32Array) {
        calls.push(sequenceId)
        sizes.push(tokens.length)
        starts.push(first)
        inBatch.push(sequenceId)
        return logitIndexes.map((_, index) => inBatch.length * 100 + index)
      },
      decodeBatch: () => new Promise<void>((resolve, reject) => (batch = {reject, resolve})),
      initBatch() {
        inBatch = []
      },
    },
    _decodeTokens(_request: unknown, _mapLogits: unknown): Promise<Array<[number, unknown]>> {
      throw new Error('node-llama-cpp\'s own dispatch is not used')
    },
    batchSize,
  }
  /** Ends the batch being computed, and lets its requests have their tokens. */
  const finish = async () => {
    batch!.resolve()
    await new Promise((resolve) => setImmediate(resolve))
  }
  const failBatch = async (error: Error) => {
    batch!.reject(error)
    await new Promise((resolve) => setImmediate(resolve))
  }
  return {calls, context, failBatch, finish, sizes, starts}
}

function manualTimers() {
  const armed: Array<() => void> = []
  const timers: GathererTimers = {
    clear: (handle) => armed.splice(armed.indexOf(handle as () => void), 1),
    set(callback) {
      armed.push(callback)
      return callback
    },
  }
  return {armed, timers}
}

const install = (context: object, timers: GathererTimers) => BatchGatherer.install(context, {timers}) as BatchGatherer
/** A decode of `tokens` tokens at the start of the sequence, sampling after the last, as node-llama-cpp asks. */
const ask = (context: {_decodeTokens(request: unknown, mapLogits: unknown): Promise<unknown>}, sequenceId: number, tokens = 1) =>
  context._decodeTokens(
    {firstTokenSequenceIndex: 0, logits: Array.from({length: tokens}, (_, index) => index === tokens - 1), sequenceId, tokens: Array.from({length: tokens}, () => 0)},
    (batchLogitIndex: number) => `token of ${sequenceId} at ${batchLogitIndex}`,
  )
const tick = () => new Promise((resolve) => setImmediate(resolve))

describe('batch gatherer', () => {
  it('holds requests while a batch is decoded and sends them together, ordered by sequence id, once every sequence of that batch asked again', async () => {
    const {calls, context, finish} = fakeContext()
    const {armed, timers} = manualTimers()
    install(context, timers)
    const first = ask(context, 3)
    expect(calls).to.deep.equal([3])
    void ask(context, 1)
    void ask(context, 0)
    await tick()
    expect(calls, 'nothing joins a batch already being decoded').to.deep.equal([3])
    await finish()
    expect(await first, 'the sampled token, at its place in the sequence').to.deep.equal([[0, 'token of 3 at 100']])
    expect(calls, 'sequence 3 has not asked again yet').to.deep.equal([3])
    expect(armed).to.have.length(1)
    void ask(context, 3)
    expect(calls).to.deep.equal([3, 0, 1, 3])
    expect(armed, 'the straggler timer is cleared').to.have.length(0)
  })

  it('stops waiting for a sequence that does not come back when its timer fires, or at once when it is settled', async () => {
    const {calls, context, finish} = fakeContext()
    const {armed, timers} = manualTimers()
    const gatherer = install(context, timers)
    void ask(context, 1)
    void ask(context, 2)
    await finish()
    expect(calls, 'sequence 2 waits for sequence 1 to ask again').to.deep.equal([1])
    armed[0]()
    expect(calls).to.deep.equal([1, 2])

    await finish()
    void ask(context, 1)
    await tick()
    expect(calls, 'sequence 1 waits for sequence 2').to.deep.equal([1, 2])
    gatherer.settle(2)
    expect(calls).to.deep.equal([1, 2, 1])
    expect(armed).to.have.length(0)
  })

  it('decodes a prompt longer than a batch over several, each generating sequence getting its token first', async () => {
    const {calls, context, finish, sizes, starts} = fakeContext(8)
    const {armed, timers} = manualTimers()
    const gatherer = install(context, timers)
    const prompt = ask(context, 0, 20)
    void ask(context, 1)
    expect(calls).to.deep.equal([0])
    await finish()
    expect(calls).to.deep.equal([0, 0, 1])
    expect(sizes).to.deep.equal([8, 7, 1])
    expect(starts, 'the prompt goes on where it stopped').to.deep.equal([0, 8, 0])
    await finish()
    armed[0]()
    expect(sizes.slice(3)).to.deep.equal([5])
    await finish()
    expect(await prompt, 'only the last token of the prompt has logits').to.deep.equal([[19, 'token of 0 at 100']])
    gatherer.settle(0)
  })

  it('hands a failed batch to its requests and goes on with the others', async () => {
    const {calls, context, failBatch, finish} = fakeContext()
    const {timers} = manualTimers()
    install(context, timers)
    const failing = ask(context, 0).catch((error: Error) => error.message)
    const waiting = ask(context, 1)
    await failBatch(new Error('decode failed'))
    expect(await failing).to.equal('decode failed')
    expect(calls).to.deep.equal([0, 1])
    await finish()
    expect(await waiting).to.deep.equal([[0, 'token of 1 at 100']])
  })

  it('fails only the request whose logits could not be mapped', async () => {
    const {calls, context, finish} = fakeContext()
    const {timers} = manualTimers()
    install(context, timers)
    const first = ask(context, 0)
    const failing = context
      ._decodeTokens({firstTokenSequenceIndex: 0, logits: [true], sequenceId: 1, tokens: [0]}, () => Promise.reject(new Error('sampling failed')))
      .catch((error: Error) => error.message)
    await finish()
    await first
    const next = ask(context, 0)
    expect(calls).to.deep.equal([0, 0, 1])
    await finish()
    expect(await failing).to.equal('sampling failed')
    expect(await next).to.deep.equal([[0, 'token of 0 at 100']])
  })

  it('starts requests that arrive together at an idle model together, waiting at most for the arrival timer', async () => {
    const {calls, context, finish} = fakeContext()
    const {armed, timers} = manualTimers()
    const gatherer = install(context, timers)
    const alone = gatherer.arriving()
    alone.at(0)
    void ask(context, 0)
    expect(calls, 'a lone request waits for nothing').to.deep.equal([0])
    await finish()
    gatherer.settle(0)

    const [first, second, third] = [gatherer.arriving(), gatherer.arriving(), gatherer.arriving()]
    first.at(2)
    void ask(context, 2)
    expect(calls, 'the first waits for the others announced with it').to.deep.equal([0])
    second.at(1)
    void ask(context, 1)
    expect(calls).to.deep.equal([0])
    third.release()
    expect(calls, 'one that gave up is not waited for; the others go together, in order').to.deep.equal([0, 1, 2])
    expect(armed).to.have.length(0)
    await finish()
    gatherer.settle(1)
    gatherer.settle(2)

    const late = gatherer.arriving()
    gatherer.arriving().at(5)
    late.at(4)
    void ask(context, 4)
    expect(armed).to.have.length(1)
    armed[0]()
    expect(calls, 'one that is slow to ask is waited for until the timer fires').to.deep.equal([0, 1, 2, 4])
  })

  it('holds the next batch for a newcomer that has leased its sequence, but not for one still preparing', async () => {
    const {calls, context, finish} = fakeContext()
    const {armed, timers} = manualTimers()
    const gatherer = install(context, timers)
    void ask(context, 0)
    await finish()
    const preparing = gatherer.arriving()
    void ask(context, 0)
    expect(calls, 'a generating sequence does not wait for a prompt being rendered').to.deep.equal([0, 0])
    await finish()

    preparing.at(1)
    void ask(context, 0)
    expect(calls, 'but for a newcomer about to ask').to.deep.equal([0, 0])
    expect(armed).to.have.length(1)
    void ask(context, 1)
    expect(calls).to.deep.equal([0, 0, 0, 1])
    expect(armed).to.have.length(0)
  })

  it('puts the context back as it was on dispose, failing what still waits, and says why when the context has no entry point to wrap', async () => {
    const {context} = fakeContext()
    const original = context._decodeTokens
    const {timers} = manualTimers()
    const gatherer = install(context, timers)
    void ask(context, 0)
    const waiting = ask(context, 1)
    gatherer.dispose()
    expect(await waiting.catch((error: Error) => error.message)).to.equal('the model is being unloaded')
    expect(context._decodeTokens).to.equal(original)
    expect(BatchGatherer.install({batchSize: 1})).to.match(/no LlamaContext._decodeTokens or native batch calls/)
  })
})

describe('batch gatherer on node-llama-cpp', function () {
  this.timeout(60_000)

  it('drives the real context, so that sequences generating together share every decode, in order', async () => {
    const directory = await temporaryDirectory()
    const {filePath} = await writeRandomLlamaGguf(join(directory, 'tiny.gguf'))
    const {getLlama} = await import('node-llama-cpp')
    const llama = await getLlama({build: 'never', gpu: false})
    const model = await llama.loadModel({modelPath: filePath})
    const context = await model.createContext({contextSize: 256, sequences: 2, threads: 1})
    try {
      // The native context's methods cannot be reassigned, so the gatherer is handed a recording stand-in.
      const internals = context as unknown as {_ctx: Record<string | symbol, unknown> & {addToBatch(sequenceId: number, ...rest: unknown[]): Uint32Array}}
      const native = internals._ctx
      const calls: number[] = []
      internals._ctx = new Proxy(native, {
        get(target, key) {
          if (key === 'addToBatch')
            return (sequenceId: number, ...rest: unknown[]) => {
              calls.push(sequenceId)
              return target.addToBatch(sequenceId, ...rest)
            }
          const value = target[key]
          return typeof value === 'function' ? value.bind(target) : value
        },
      })

      const gatherer = BatchGatherer.install(context, {stragglerMs: 60_000})
      expect(gatherer).to.be.instanceOf(BatchGatherer)
      const generate = async (sequenceId: number, prompt: string) => {
        const sequence = context.getSequence()
        let count = 0
        for await (const _ of sequence.evaluate(model.tokenize(prompt), {temperature: 0})) if (++count === 12) break
        ;(gatherer as BatchGatherer).settle(sequenceId)
      }

      await Promise.all([generate(0, 'Once upon a time'), generate(1, 'The sea was calm')])
      // Sequence 0's prompt goes alone; from then on both share each decode, until sequence 0 has its 12 tokens.
      expect(calls).to.deep.equal([0, ...Array.from({length: 11}, () => [0, 1]).flat(), 1])
      ;(gatherer as BatchGatherer).dispose()
    } finally {
      await context.dispose()
      await model.dispose()
      await llama.dispose()
    }
  })
})
