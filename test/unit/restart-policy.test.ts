import {expect} from 'chai'

import {DEFAULT_RESTART_POLICY, planRestart, restartPolicyFrom} from '../../src/cluster/restart-policy.js'

describe('restart policy (self-healing backoff)', () => {
  const policy = {...DEFAULT_RESTART_POLICY, attempts: 5, baseDelayMs: 1000, maxDelayMs: 8000, stableMs: 60_000}

  it('doubles the delay with each crash in a row, capped, and gives up after the limit', () => {
    const delays = [0, 1, 2, 3, 4].map((inARow) => planRestart(policy, {inARow, lastReadyAt: 1000}, 2000))
    expect(delays).to.deep.equal([
      {attempt: 1, delayMs: 1000},
      {attempt: 2, delayMs: 2000},
      {attempt: 3, delayMs: 4000},
      {attempt: 4, delayMs: 8000},
      {attempt: 5, delayMs: 8000},
    ])
    expect(planRestart(policy, {inARow: 5, lastReadyAt: 1000}, 2000)).to.deep.equal({giveUp: 'it crashed 6 times in a row and was relaunched 5 times'})
  })

  it('counts from the first attempt again once the model stayed up long enough', () => {
    expect(planRestart(policy, {inARow: 5, lastReadyAt: 1000}, 1000 + 60_000)).to.deep.equal({attempt: 1, delayMs: 1000})
    expect(planRestart(policy, {inARow: 2, lastReadyAt: 1000}, 1000 + 59_999)).to.deep.equal({attempt: 3, delayMs: 4000})
  })

  it('does not count a model that failed its requests and answered none since it became ready as stable, however long it was up', () => {
    const up = 1000 + 10 * 60_000
    // vLLM ready, its engine dying at the first request: relaunched each time, up for minutes each time.
    expect(planRestart(policy, {inARow: 2, lastReadyAt: 1000, requestFailed: true}, up)).to.deep.equal({attempt: 3, delayMs: 4000})
    expect(planRestart(policy, {inARow: 5, lastReadyAt: 1000, requestFailed: true}, up)).to.have.property('giveUp')
    // One answered since it became ready leaves it stable.
    expect(planRestart(policy, {answered: true, inARow: 5, lastReadyAt: 1000, requestFailed: true}, up)).to.deep.equal({attempt: 1, delayMs: 1000})
  })

  it('is off with SERVICE_RESTART_ATTEMPTS=0, and reads the first delay and the wait in seconds', () => {
    const off = restartPolicyFrom({SERVICE_RESTART_ATTEMPTS: '0', SERVICE_RESTART_DELAY: '0.5', SERVICE_RESTART_WAIT: '2.5'})
    expect(off).to.include({attempts: 0, baseDelayMs: 500, waitMs: 2500})
    expect(planRestart(off, {inARow: 0}, 0)).to.deep.equal({giveUp: 'self-healing is off (SERVICE_RESTART_ATTEMPTS=0)'})
    expect(restartPolicyFrom({SERVICE_RESTART_ATTEMPTS: 'many'})).to.deep.equal(DEFAULT_RESTART_POLICY)
  })
})
