/**
 * The ONNX Runtime engine's dynamic batching without ONNX Runtime: requests' rows stacked and cut back apart, which
 * requests may share a run, and the batcher's queue under timers the test turns by hand.
 */
import {expect} from 'chai'

import {concatRows, fixedFirstDimension, rowShapeOf, splitRows} from '../../plugins/engine-onnxruntime/src/batch-rows.js'
import {type BatcherTimers, DynamicBatcher} from '../../plugins/engine-onnxruntime/src/dynamic-batcher.js'
import type {TensorValue} from '../../plugins/engine-onnxruntime/src/tensors.js'

const floats = (dims: number[], values: number[]): TensorValue => ({data: Float32Array.from(values), dims})

describe('ONNX dynamic batching: rows', () => {
  it('stacks requests along the first dimension in their order, keeping the dtype', () => {
    const stacked = concatRows([floats([1, 2], [1, 2]), floats([2, 2], [3, 4, 5, 6])])
    expect(stacked.dims).to.deep.equal([3, 2])
    expect(stacked.data).to.be.instanceOf(Float32Array)
    expect([...(stacked.data as Float32Array)]).to.deep.equal([1, 2, 3, 4, 5, 6])
    const integers = concatRows([{data: BigInt64Array.from([1n]), dims: [1]}, {data: BigInt64Array.from([2n, 3n]), dims: [2]}])
    expect([...(integers.data as BigInt64Array)]).to.deep.equal([1n, 2n, 3n])
    expect(concatRows([{data: ['a'], dims: [1]}, {data: ['b', 'c'], dims: [2]}])).to.deep.equal({data: ['a', 'b', 'c'], dims: [3]})
  })

  it('cuts an output back into each request\'s rows, and gives up on one whose first dimension is not the batch', () => {
    const parts = splitRows({data: Float32Array.from([1, 2, 3, 4, 5, 6]), dims: [3, 2]}, [1, 0, 2])!
    expect(parts.map(({dims}) => dims)).to.deep.equal([[1, 2], [0, 2], [2, 2]])
    expect(parts.map(({data}) => [...(data as Float32Array)])).to.deep.equal([[1, 2], [], [3, 4, 5, 6]])
    expect(splitRows({data: ['x', 'y', 'z'], dims: [3]}, [2, 1])!.map(({data}) => data)).to.deep.equal([['x', 'y'], ['z']])
    expect(splitRows({data: Float32Array.from([1, 2]), dims: [2]}, [2, 1])).to.equal(undefined)
    expect(splitRows({data: Float32Array.from([1]), dims: []}, [1])).to.equal(undefined)
  })

  it('batches a request only when its inputs share their first dimension; its key is the rest of their dims', () => {
    expect(rowShapeOf([floats([2, 3], [0, 0, 0, 0, 0, 0]), floats([2], [0, 0])])).to.deep.equal({key: '3;', rows: 2})
    expect(rowShapeOf([floats([2, 3], [0, 0, 0, 0, 0, 0]), floats([1], [0])])).to.equal(undefined)
    expect(rowShapeOf([floats([], [0])])).to.equal(undefined)
  })

  it('names the first input or output whose first dimension is fixed', () => {
    const x = {dtype: 'float32', name: 'x', shape: ['N', 3]}
    const bias = {dtype: 'float32', name: 'bias', shape: [2]}
    const open = {dtype: 'float32', name: 'open', shape: []}
    expect(fixedFirstDimension([x, {...x, name: 'y', shape: ['', 2]}])).to.equal(undefined)
    expect(fixedFirstDimension([x, bias])).to.equal(bias)
    expect(fixedFirstDimension([x, open])).to.equal(open)
  })
})

/** Timers the test runs by hand: `turn()` runs what was due after this event-loop turn, `elapse(ms)` moves time. */
class HandTimers implements BatcherTimers {
  time = 0
  private due: Array<{at: number; callback: () => void}> = []
  later(callback: () => void, delayMs: number) {
    this.due.push({at: this.time + delayMs, callback})
  }

  now() {
    return this.time
  }

  async elapse(ms: number) {
    this.time += ms
    const ready = this.due.filter(({at}) => at <= this.time)
    this.due = this.due.filter(({at}) => at > this.time)
    for (const {callback} of ready) callback()
    // Let the run's promise and the batcher's next scheduling settle.
    for (let index = 0; index < 5; index++) await Promise.resolve()
  }
}

describe('ONNX dynamic batching: the queue', () => {
  const shape = (rows: number, key = 'k') => ({key, rows})
  function batcher(maxBatchSize: number, maxQueueDelayMs = 0) {
    const timers = new HandTimers()
    const runs: string[][] = []
    const instance = new DynamicBatcher<string, string>({
      maxBatchSize,
      maxQueueDelayMs,
      async run(items) {
        runs.push(items)
        if (items.includes('poison')) throw new Error('the run failed')
        return items.map((item) => `${item}!`)
      },
      timers,
    })
    return {instance, runs, timers}
  }

  it('runs what waits together as one batch, each request answered with its own result', async () => {
    const {instance, runs, timers} = batcher(8)
    const answers = [instance.submit('a', shape(1), new AbortController().signal), instance.submit('b', shape(2), new AbortController().signal)]
    await timers.elapse(0)
    expect(await Promise.all(answers)).to.deep.equal(['a!', 'b!'])
    expect(runs).to.deep.equal([['a', 'b']])
  })

  it('batches requests with the same other dims only, up to max_batch_size rows; one that cannot batch runs alone', async () => {
    const {instance, runs, timers} = batcher(4)
    const signal = new AbortController().signal
    const answers = [
      instance.submit('a', shape(2), signal),
      instance.submit('wide', shape(1, 'other'), signal),
      instance.submit('b', shape(2), signal),
      instance.submit('c', shape(1), signal),
      instance.submit('alone', undefined, signal),
      instance.submit('big', shape(9), signal),
    ]
    for (let index = 0; index < 6; index++) await timers.elapse(0)
    expect(await Promise.all(answers)).to.deep.equal(['a!', 'wide!', 'b!', 'c!', 'alone!', 'big!'])
    expect(runs).to.deep.equal([['a', 'b'], ['wide'], ['c'], ['alone'], ['big']])
  })

  it('with a queue delay, waits for others up to the delay unless the batch fills first', async () => {
    const {instance, runs, timers} = batcher(3, 10)
    const signal = new AbortController().signal
    const first = instance.submit('a', shape(1), signal)
    await timers.elapse(4)
    expect(runs).to.deep.equal([])
    const second = instance.submit('b', shape(1), signal)
    await timers.elapse(6)
    expect(runs).to.deep.equal([['a', 'b']])
    expect(await Promise.all([first, second])).to.deep.equal(['a!', 'b!'])
    const full = [instance.submit('c', shape(2), signal), instance.submit('d', shape(1), signal)]
    await timers.elapse(0)
    expect(runs).to.deep.equal([['a', 'b'], ['c', 'd']])
    expect(await Promise.all(full)).to.deep.equal(['c!', 'd!'])
  })

  it('drops an aborted request from the queue without touching its batch-mates', async () => {
    const {instance, runs, timers} = batcher(8)
    const gone = new AbortController()
    const kept = instance.submit('a', shape(1), new AbortController().signal)
    const dropped = instance.submit('b', shape(1), gone.signal)
    gone.abort(new Error('client went away'))
    await timers.elapse(0)
    expect(await kept).to.equal('a!')
    await dropped.then(
      () => expect.fail('the aborted request was answered'),
      (error: Error) => expect(error.message).to.equal('client went away'),
    )
    expect(runs).to.deep.equal([['a']])
  })

  it('runs a failed batch again one request at a time, so only the request at fault fails, and keeps serving', async () => {
    const {instance, runs, timers} = batcher(2)
    const signal = new AbortController().signal
    const answers = [instance.submit('poison', shape(1), signal), instance.submit('x', shape(1), signal)].map((answer) => answer.catch((error: Error) => error.message))
    const later = instance.submit('y', shape(1), signal)
    for (let index = 0; index < 3; index++) await timers.elapse(0)
    expect(await Promise.all(answers)).to.deep.equal(['the run failed', 'x!'])
    expect(await later).to.equal('y!')
    expect(runs).to.deep.equal([['poison', 'x'], ['poison'], ['x'], ['y']])
  })
})
