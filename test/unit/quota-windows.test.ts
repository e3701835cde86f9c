import {expect} from 'chai'

import {scopeMatcher} from '../../src/auth/key-limits.js'
import {QuotaWindows} from '../../src/auth/quota-windows.js'

/** 2026-11-28T23:59:30Z: half a minute before both the minute and the UTC day end. */
const LATE = Date.UTC(2026, 10, 28, 23, 59, 30)

const refusal = (windows: QuotaWindows, quotas: Parameters<QuotaWindows['check']>[1]) => {
  try {
    windows.check('alice-key1', quotas, 'the API key "alice-key1"')
  } catch (error) {
    return error as Error & {status: number; code: string; retryAfterSeconds: number}
  }

  return undefined
}

describe('quota windows', () => {
  it('refuses once the minute has as many requests as its quota, until the next minute', () => {
    let now = LATE
    const windows = new QuotaWindows(() => now)
    for (let i = 0; i < 3; i++) {
      expect(refusal(windows, {requests_per_minute: 3})).to.equal(undefined)
      windows.countRequest('alice-key1')
    }

    const error = refusal(windows, {requests_per_minute: 3})!
    expect(error).to.include({code: 'quota_exceeded', retryAfterSeconds: 30, status: 429})
    expect(error.message).to.equal(
      'the API key "alice-key1" has used its quota of 3 requests per minute (requests_per_minute); it frees in 30 s, at 2026-11-29T00:00:00.000Z. Ask an administrator to raise requests_per_minute in the access-control config.',
    )
    expect(refusal(windows, {requests_per_day: 4}), 'the day still has room').to.equal(undefined)
    now += 29_999
    expect(refusal(windows, {requests_per_minute: 3})?.retryAfterSeconds).to.equal(1)
    now += 1
    expect(refusal(windows, {requests_per_minute: 3})).to.equal(undefined)
  })

  it('counts tokens once known, refusing only a window already spent, and days by UTC', () => {
    let now = LATE - 12 * 3_600_000
    const windows = new QuotaWindows(() => now)
    windows.countRequest('alice-key1')
    windows.countTokens('alice-key1', 90)
    expect(refusal(windows, {tokens_per_day: 100})).to.equal(undefined)
    windows.countTokens('alice-key1', 20)
    now += 60_000
    const error = refusal(windows, {tokens_per_day: 100})!
    expect(error.message).to.contain('its quota of 100 tokens per day (tokens_per_day)')
    expect(error.retryAfterSeconds).to.equal(12 * 3600 - 60 + 30)
    expect(refusal(windows, {tokens_per_minute: 100}), 'a new minute').to.equal(undefined)
    now = LATE + 30_000
    expect(refusal(windows, {tokens_per_day: 100}), 'a new day').to.equal(undefined)
  })

  it('starts the day from what a restart kept, and keeps keys apart', () => {
    const windows = new QuotaWindows(() => LATE)
    windows.seedDay('alice-key1', 5, 0)
    windows.countRequest('bob-key1')
    expect(refusal(windows, {requests_per_day: 5})?.code).to.equal('quota_exceeded')
    expect(refusal(windows, {requests_per_day: 6})).to.equal(undefined)
    expect(refusal(windows, undefined)).to.equal(undefined)
  })

  it('keeps a few numbers per key, however many requests it counts', () => {
    const windows = new QuotaWindows()
    for (let i = 0; i < 10_000; i++) {
      windows.check('alice-key1', {requests_per_minute: 1e9, tokens_per_day: 1e9}, 'k')
      windows.countRequest('alice-key1')
    }

    expect((windows as unknown as {keys: Map<string, unknown>}).keys.size).to.equal(1)
  })
})

describe('model scope patterns', () => {
  it('matches uids with * and ?, everything else literally', () => {
    const inScope = scopeMatcher(['qwen*', 'tiny-?', 'a.b'])
    expect(['qwen', 'qwen2.5-7b', 'tiny-1', 'a.b'].filter(inScope)).to.have.length(4)
    expect(['xqwen', 'tiny-12', 'tiny-', 'aXb', 'a.bc'].filter(inScope)).to.deep.equal([])
  })
})
