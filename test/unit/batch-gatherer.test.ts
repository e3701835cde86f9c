import {expect} from 'chai'
import {join} from 'node:path'

import {BatchGatherer, type GathererTimers} from '../../plugins/engine-llama-cpp/src/batch-gatherer.js'
import {writeTestLlamaGguf} from '../helpers/gguf/models.js'
import {temporaryDirectory} from '../helpers/service.js'

/** A context whose decodes finish when the test says, recording which sequences each call carried. */
function fakeContext(batchSize = 8) {
  const pending = new Map<number, {resolve(value: unknown): void; reject(error: unknown): void}>()
  const calls: number[] = []
  const context = {
    batchSize,
    dispatched: 0,
    dispatchPendingBatch() {
      context.dispatched++
    },
    _decodeTokens(request: {sequenceId: number; tokens: number[]}) {
      calls.push(request.sequenceId)
      return new Promise((resolve, reject) => pending.set(request.sequenceId, {reject, resolve}))
    },
  }
  const finish = async (...ids: number[]) => {
    for (const id of ids) pending.get(id)!.resolve(`token of ${id}`)
    await new Promise((resolve) => setImmediate(resolve))
  }
  return {calls, context, finish, pending}
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
const ask = (context: {_decodeTokens(request: unknown): Promise<unknown>}, sequenceId: number, tokens = 1) =>
  context._decodeTokens({sequenceId, tokens: Array.from({length: tokens}, () => 0)})
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
    await finish(3)
    expect(await first).to.equal('token of 3')
    expect(calls, 'sequence 3 has not asked again yet').to.deep.equal([3])
    expect(armed).to.have.length(1)
    void ask(context, 3)
    expect(calls).to.deep.equal([3, 0, 1, 3])
    expect(context.dispatched, 'each batch starts as soon as it is sent').to.equal(2)
    expect(armed, 'the straggler timer is cleared').to.have.length(0)
  })

  it('stops waiting for a sequence that does not come back when its timer fires, or at once when it is settled', async () => {
    const {calls, context, finish} = fakeContext()
    const {armed, timers} = manualTimers()
    const gatherer = install(context, timers)
    void ask(context, 1)
    void ask(context, 2)
    await finish(1)
    expect(calls, 'sequence 2 waits for sequence 1 to ask again').to.deep.equal([1])
    armed[0]()
    expect(calls).to.deep.equal([1, 2])

    await finish(2)
    void ask(context, 1)
    await tick()
    expect(calls, 'sequence 1 waits for sequence 2').to.deep.equal([1, 2])
    gatherer.settle(2)
    expect(calls).to.deep.equal([1, 2, 1])
    expect(armed).to.have.length(0)
  })

  it('does not hold other sequences back while a request longer than one batch is decoded', async () => {
    const {calls, context} = fakeContext(8)
    const {timers} = manualTimers()
    install(context, timers)
    void ask(context, 0, 100)
    void ask(context, 1)
    expect(calls).to.deep.equal([0, 1])
  })

  it('hands a failed decode to its caller and goes on with the others', async () => {
    const {calls, context, pending, finish} = fakeContext()
    const {timers} = manualTimers()
    install(context, timers)
    const failing = ask(context, 0)
    void ask(context, 1)
    pending.get(0)!.reject(new Error('decode failed'))
    expect(await failing.catch((error: Error) => error.message)).to.equal('decode failed')
    expect(calls).to.deep.equal([0, 1])
    await finish(1)
  })

  it('starts requests that arrive together at an idle model together, waiting at most for the arrival timer', async () => {
    const {calls, context, finish} = fakeContext()
    const {armed, timers} = manualTimers()
    const gatherer = install(context, timers)
    const alone = gatherer.arriving()
    alone.at(0)
    void ask(context, 0)
    expect(calls, 'a lone request waits for nothing').to.deep.equal([0])
    await finish(0)
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
    await finish(1, 2)
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
    await finish(0)
    const preparing = gatherer.arriving()
    void ask(context, 0)
    expect(calls, 'a generating sequence does not wait for a prompt being rendered').to.deep.equal([0, 0])
    await finish(0)

    preparing.at(1)
    void ask(context, 0)
    expect(calls, 'but for a newcomer about to ask').to.deep.equal([0, 0])
    expect(armed).to.have.length(1)
    void ask(context, 1)
    expect(calls).to.deep.equal([0, 0, 0, 1])
    expect(armed).to.have.length(0)
  })

  it('puts the context back as it was on dispose, and says why when the context has no entry point to wrap', () => {
    const {context} = fakeContext()
    const original = context._decodeTokens
    const {timers} = manualTimers()
    install(context, timers).dispose()
    expect(context._decodeTokens).to.equal(original)
    expect(BatchGatherer.install({batchSize: 1})).to.match(/no LlamaContext._decodeTokens or dispatchPendingBatch/)
  })
})

describe('batch gatherer on node-llama-cpp', function () {
  this.timeout(60_000)

  it('wraps the real context, so that sequences generating together share every decode, in order', async () => {
    const directory = await temporaryDirectory()
    const {filePath} = await writeTestLlamaGguf(join(directory, 'tiny.gguf'))
    const {getLlama} = await import('node-llama-cpp')
    const llama = await getLlama({build: 'never', gpu: false})
    const model = await llama.loadModel({modelPath: filePath})
    const context = await model.createContext({contextSize: 256, sequences: 2, threads: 1})
    try {
      const internals = context as unknown as {_decodeTokens(request: {sequenceId: number}, ...rest: unknown[]): Promise<unknown>}
      const decode = internals._decodeTokens.bind(context)
      const calls: number[] = []
      internals._decodeTokens = (request, ...rest) => {
        calls.push(request.sequenceId)
        return decode(request, ...rest)
      }

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
