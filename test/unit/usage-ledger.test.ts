import {expect} from 'chai'
import {readFile, stat, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import type {Logger} from '../../src/kernel/contracts.js'
import type {RequestFinished} from '../../src/kernel/observability.js'

import {UsageLedger} from '../../src/server/usage-ledger.js'
import {temporaryDirectory} from '../helpers/service.js'

const HOUR = 3_600_000
const START = Date.UTC(2026, 10, 28, 9, 30)

const finished = (apiKey: string | undefined, modelUid: string | undefined, promptTokens?: number, completionTokens?: number): RequestFinished => ({
  completed: true,
  durationMs: 10,
  method: 'POST',
  path: '/v1/chat/completions',
  route: '/v1/chat/completions',
  status: 200,
  streamed: false,
  ...(apiKey === undefined ? {} : {apiKey}),
  ...(modelUid === undefined ? {} : {modelUid}),
  ...(promptTokens === undefined ? {} : {promptTokens}),
  ...(completionTokens === undefined ? {} : {completionTokens}),
})

const warnings: string[] = []
const log: Logger = {debug() {}, error: (message) => warnings.push(message), info() {}, warn: (message) => warnings.push(message)}

describe('usage ledger', () => {
  it('sums requests and tokens by key and model, grouped as asked, most tokens first; requests that ran no model do not count', async () => {
    const ledger = await UsageLedger.open({now: () => START})
    ledger.record(finished('alice', 'tiny', 10, 5))
    ledger.record(finished('alice', 'tiny', 3))
    ledger.record(finished('alice', 'big', 100, 50))
    ledger.record(finished('bob', 'tiny', 1, 1))
    ledger.record(finished('bob', undefined))
    const all = {since: START - HOUR, until: START + 1}
    expect(ledger.query({...all, groupBy: 'key,model'})).to.deep.equal([
      {api_key: 'alice', completion_tokens: 50, model: 'big', prompt_tokens: 100, requests: 1, total_tokens: 150},
      {api_key: 'alice', completion_tokens: 5, model: 'tiny', prompt_tokens: 13, requests: 2, total_tokens: 18},
      {api_key: 'bob', completion_tokens: 1, model: 'tiny', prompt_tokens: 1, requests: 1, total_tokens: 2},
    ])
    expect(ledger.query({...all, groupBy: 'model'}).map((row) => [row.api_key, row.model, row.requests])).to.deep.equal([[null, 'big', 1], [null, 'tiny', 3]])
    expect(ledger.query({...all, groupBy: 'key', keys: ['bob']})).to.deep.equal([{api_key: 'bob', completion_tokens: 1, model: null, prompt_tokens: 1, requests: 1, total_tokens: 2}])
    expect(ledger.query({groupBy: 'key', since: START + HOUR, until: START + 2 * HOUR}), 'a later hour').to.deep.equal([])
    expect(ledger.today()).to.deep.equal(new Map([['alice', {requests: 3, tokens: 168}], ['bob', {requests: 1, tokens: 2}]]))
  })

  it('keeps at most its entries, dropping the oldest hours first, and nothing past the retention', async () => {
    let now = START
    const ledger = await UsageLedger.open({maxEntries: 3, now: () => now})
    for (let hour = 0; hour < 5; hour++) {
      ledger.record(finished('alice', 'tiny', 1))
      now += HOUR
    }

    const hours = ledger.query({groupBy: 'key', since: 0, until: now}).map((row) => row.requests)
    expect(hours).to.deep.equal([3])
    now += 40 * 24 * HOUR
    ledger.record(finished('alice', 'tiny', 1))
    expect((ledger as unknown as {entries: Map<string, unknown>}).entries.size, 'the old hours are past the retention').to.equal(1)
  })

  it('survives a restart in a private file, and starts empty from one it cannot use', async () => {
    const file = join(await temporaryDirectory(), 'home', 'usage.json')
    const ledger = await UsageLedger.open({file, log, now: () => START})
    ledger.record(finished('alice', 'tiny', 7, 2))
    await ledger.flush()
    expect((await stat(file)).mode & 0o777).to.equal(0o600)
    const reopened = await UsageLedger.open({file, log, now: () => START})
    expect(reopened.query({groupBy: 'key', since: START, until: START + 1})).to.deep.equal([{api_key: 'alice', completion_tokens: 2, model: null, prompt_tokens: 7, requests: 1, total_tokens: 9}])

    await writeFile(file, JSON.stringify({entries: [{hour: 0, key: 'x', model: 'm', requests: -1}], version: 1}))
    const damaged = await UsageLedger.open({file, log, now: () => START})
    expect(damaged.query({groupBy: 'key', since: 0, until: START + 1})).to.deep.equal([])
    expect(warnings.at(-1)).to.match(/^ignoring the usage in .*usage\.json, which cannot be used: it does not hold a list of hourly counts$/)
    expect(await readFile(file, 'utf8'), 'left for an operator to look at until the next write').to.contain('"requests":-1')
  })
})
