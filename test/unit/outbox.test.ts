import {expect} from 'chai'

import type {RequestMessage} from '../../src/model-process/messages.js'

import {Outbox, type OutboxTimers} from '../../src/model-process/outbox.js'
import {joinGenerationEvents} from '../../src/kernel/generation.js'

/** Timers the test runs by hand: `turn()` runs what waits for the next turn, `advance(ms)` moves the clock. */
function manualTimers() {
  let clock = 0
  let queued: Array<{at?: number; callback: () => void}> = []
  const timers: OutboxTimers = {
    later: (callback, delayMs) => queued.push({at: delayMs === undefined ? undefined : clock + delayMs, callback}),
    now: () => clock,
  }
  const run = (due: (entry: {at?: number}) => boolean) => {
    const ready = queued.filter(due)
    queued = queued.filter((entry) => !due(entry))
    for (const entry of ready) entry.callback()
  }

  return {
    advance(ms: number) {
      clock += ms
      run((entry) => entry.at !== undefined && entry.at <= clock)
    },
    timers,
    turn: () => run((entry) => entry.at === undefined),
  }
}

function outboxWith(intervalMs: number, join?: (earlier: unknown, later: unknown) => unknown) {
  const sent: unknown[] = []
  const time = manualTimers()
  const outbox = new Outbox(async (message) => void sent.push(message), intervalMs, time.timers, join)
  return {outbox, sent, time}
}

const token = (id: number, text: string): RequestMessage => ({event: {text, type: 'text'}, id, type: 'event'})

describe('model process outbox', () => {
  it('sends a request\'s first events at once, then holds its tokens until one comes an interval after the last send', () => {
    const {outbox, sent, time} = outboxWith(3)
    outbox.post(token(1, 'start'))
    expect(sent, 'the start goes out at once').to.deep.equal([token(1, 'start')])
    outbox.post(token(1, 'first'))
    expect(sent, 'so does the first token (the TTFT)').to.deep.equal([token(1, 'start'), token(1, 'first')])

    outbox.post(token(1, 'a'))
    time.turn()
    outbox.post(token(1, 'b'))
    time.turn()
    time.advance(3)
    expect(sent, 'later tokens wait for the next one after the interval').to.have.length(2)
    outbox.post(token(1, 'c'))
    expect(sent, 'which leaves on the next turn').to.have.length(2)
    time.turn()
    expect(sent[2], 'with them').to.deep.equal({messages: [token(1, 'a'), token(1, 'b'), token(1, 'c')], type: 'batch'})
  })

  it('holds a token only while the next one, coming as late after it as it came after the one before, is due within the interval', () => {
    const {outbox, sent, time} = outboxWith(16)
    outbox.post(token(1, 'start'))
    outbox.post(token(1, 'first'))
    for (const text of ['a', 'b', 'c']) {
      time.advance(10)
      outbox.post(token(1, text))
      time.turn()
    }

    expect(sent.slice(2), 'a token every 10 ms: the next would come after the interval, so each leaves at once').to.deep.equal([
      token(1, 'a'),
      token(1, 'b'),
      token(1, 'c'),
    ])
    for (let step = 1; step <= 15; step++) {
      time.advance(1)
      outbox.post(token(1, String(step)))
      time.turn()
      if (step === 14) expect(sent, 'a token every millisecond is held…').to.have.length(5)
    }

    expect(sent.slice(5), '…until the one that the next would follow after the interval').to.deep.equal([
      {messages: Array.from({length: 15}, (_, index) => token(1, String(index + 1))), type: 'batch'},
    ])
  })

  it('sends held tokens by timer when no message follows them, at most twice the interval after the last send', () => {
    const {outbox, sent, time} = outboxWith(3)
    outbox.post(token(1, 'start'))
    outbox.post(token(1, 'first'))
    time.advance(1)
    outbox.post(token(1, 'held'))
    time.turn()
    time.advance(4)
    expect(sent).to.have.length(2)
    time.advance(1)
    expect(sent[2]).to.deep.equal(token(1, 'held'))
  })

  it('sends held tokens at once when a request ends or another request starts', () => {
    const {outbox, sent, time} = outboxWith(3)
    outbox.post(token(1, 'start'))
    outbox.post(token(1, 'first'))
    outbox.post(token(1, 'held'))
    time.turn()
    outbox.post({id: 1, type: 'end'})
    expect(sent[2]).to.deep.equal({messages: [token(1, 'held'), {id: 1, type: 'end'}], type: 'batch'})

    outbox.post(token(1, 'start'))
    outbox.post(token(1, 'first'))
    outbox.post(token(1, 'held'))
    time.turn()
    outbox.post(token(2, 'start'))
    expect(sent.slice(3), 'a request id used again counts from its start').to.deep.equal([
      token(1, 'start'),
      token(1, 'first'),
      {messages: [token(1, 'held'), token(2, 'start')], type: 'batch'},
    ])
    time.advance(10)
    expect(sent, 'the stale timer sends nothing twice').to.have.length(6)
  })

  it('flush() sends what is held without waiting', async () => {
    const {outbox, sent, time} = outboxWith(1000)
    outbox.post(token(1, 'start'))
    outbox.post(token(1, 'first'))
    outbox.post(token(1, 'held'))
    await outbox.flush()
    expect(sent.at(-1)).to.deep.equal(token(1, 'held'))
    time.turn()
    time.advance(1000)
    expect(sent).to.have.length(3)
  })

  it('with an interval of 0 sends every turn\'s messages on the next turn', () => {
    const {outbox, sent, time} = outboxWith(0)
    for (const text of ['start', 'first', 'a', 'b']) {
      outbox.post(token(1, text))
      time.turn()
    }

    expect(sent).to.have.length(4)
  })

  it('joins the text a request produces within one interval into one event, each request on its own', () => {
    const {outbox, sent, time} = outboxWith(3, joinGenerationEvents)
    const event = (id: number, event: object): RequestMessage => ({event, id, type: 'event'})
    for (const id of [1, 2]) {
      outbox.post(event(id, {promptTokens: 5, type: 'start'}))
      outbox.post(token(id, 'first'))
    }

    expect(sent, 'a start and a first token stay apart').to.deep.equal([
      event(1, {promptTokens: 5, type: 'start'}),
      token(1, 'first'),
      event(2, {promptTokens: 5, type: 'start'}),
      token(2, 'first'),
    ])
    for (const text of [' a', ' b']) {
      outbox.post(token(1, text))
      outbox.post(token(2, text.toUpperCase()))
      time.turn()
    }

    outbox.post(event(2, {index: 0, name: 'lookup', type: 'tool_call'}))
    outbox.post(event(2, {index: 0, text: '{"q":', type: 'tool_arguments'}))
    outbox.post(event(2, {index: 0, text: '1}', type: 'tool_arguments'}))
    time.advance(3)
    outbox.post(token(1, ' c'))
    time.turn()
    expect(sent[4]).to.deep.equal({
      messages: [
        token(1, ' a b c'),
        token(2, ' A B'),
        event(2, {index: 0, name: 'lookup', type: 'tool_call'}),
        event(2, {index: 0, text: '{"q":1}', type: 'tool_arguments'}),
      ],
      type: 'batch',
    })
    outbox.post(token(1, ' d'))
    outbox.post({id: 1, type: 'end'})
    outbox.post(token(2, ' after'))
    time.turn()
    time.advance(6)
    expect(sent.slice(5), 'nothing joins what has been sent').to.deep.equal([{messages: [token(1, ' d'), {id: 1, type: 'end'}], type: 'batch'}, token(2, ' after')])

    outbox.post(event(3, {promptTokens: 5, type: 'start'}))
    outbox.post(token(3, 'first'))
    outbox.post(token(3, ' second'))
    outbox.post(token(3, ' third'))
    time.advance(6)
    expect(sent.slice(7), 'the first token leaves alone even when others follow it at once').to.deep.equal([
      event(3, {promptTokens: 5, type: 'start'}),
      token(3, 'first'),
      token(3, ' second third'),
    ])
  })
})
