/**
 * pacedEvents: an external program's event stream paced as a model process paces its own (the Outbox), with the
 * test's own clock and event-loop turns, so what goes on together is decided by the pacing alone.
 */
import {expect} from 'chai'

import type {OutboxTimers} from '../../src/model-process/outbox.js'

import {joinGenerationEvents} from '../../src/kernel/generation.js'
import {pacedEvents} from '../../src/model-process/paced-events.js'

/** A clock that stands still and turns that never come: only a request's first events and its end send anything. */
const frozen: OutboxTimers = {later: () => {}, now: () => 0}

const text = (piece: string) => ({text: piece, type: 'text'})
const done = {completionTokens: 40, finishReason: 'length', promptTokens: 7, type: 'done'}

async function* source(events: unknown[], failure?: Error) {
  for (const event of events) {
    await Promise.resolve()
    yield event
  }

  if (failure) throw failure
}

async function collect(events: AsyncIterable<unknown>) {
  const seen: unknown[] = []
  for await (const event of events) seen.push(event)
  return seen
}

describe('pacedEvents', () => {
  const pieces = Array.from({length: 40}, (_, index) => ` word${index}`)

  it('sends the first two events alone and joins the text that follows within the interval, ending with the same done', async () => {
    const seen = await collect(pacedEvents(source([...pieces.map((piece) => text(piece)), done]), 16, joinGenerationEvents, frozen))
    expect(seen).to.deep.equal([text(' word0'), text(' word1'), text(pieces.slice(2).join('')), done])
  })

  it('with real timers, a burst of tokens still arrives in fewer events with the same text', async () => {
    const seen = (await collect(pacedEvents(source([...pieces.map((piece) => text(piece)), done]), 16, joinGenerationEvents))) as Array<{text?: string}>
    expect(seen[0]).to.deep.equal(text(' word0'))
    expect(seen.length).to.be.below(pieces.length)
    expect(seen.map((event) => event.text ?? '').join('')).to.equal(pieces.join(''))
    expect(seen.at(-1)).to.deep.equal(done)
  })

  it("passes on what came before the source's failure, then the failure itself", async () => {
    const failure = new Error('the connection to the program broke')
    const events = pacedEvents(source([text('a'), text('b'), text('c'), text('d')], failure), 16, joinGenerationEvents, frozen)
    const seen: unknown[] = []
    const thrown = await (async () => {
      for await (const event of events) seen.push(event)
    })().catch((error) => error)
    expect(thrown).to.equal(failure)
    expect(seen).to.deep.equal([text('a'), text('b'), text('cd')])
  })

  it('a consumer that stops early returns the source', async () => {
    let returned = false
    let release!: () => void
    const endless: AsyncIterableIterator<unknown> = {
      [Symbol.asyncIterator]: () => endless,
      next: () => new Promise((resolve) => (release = () => resolve({done: false, value: text('x')}))),
      async return() {
        returned = true
        return {done: true, value: undefined}
      },
    }
    const events = pacedEvents(endless, 16, joinGenerationEvents, frozen)
    const first = events.next()
    release()
    expect(await first).to.deep.equal({done: false, value: text('x')})
    await events.return(undefined)
    expect(returned).to.equal(true)
  })
})
