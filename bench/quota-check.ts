/**
 * What the per-key accounting adds to a request, in process: the quota check the guard makes (AccessControl.checkQuotas
 * with all four quotas set), the counting of the request and its tokens (QuotaWindows), and the usage ledger's
 * entry (UsageLedger.record, in memory; the file is written a few seconds after a change, once for many requests).
 * Prints nanoseconds per request, median of the rounds. `node --import tsx bench/quota-check.ts --requests 200000 --rounds 7`
 */
import {loadavg} from 'node:os'
import {parseArgs} from 'node:util'

import {AccessControl} from '../src/auth/access-control.js'
import {parseAuthConfig} from '../src/auth/config.js'
import {UsageLedger} from '../src/server/usage-ledger.js'
import {AUTH_SECRET} from '../test/helpers/auth.js'

const {values} = parseArgs({options: {requests: {default: '200000', type: 'string'}, rounds: {default: '7', type: 'string'}}})
const requests = Number(values.requests)
const KEY = 'sk-benchbench001'
const quotas = {requests_per_day: 1e9, requests_per_minute: 1e9, tokens_per_day: 1e9, tokens_per_minute: 1e9}
const access = new AccessControl(
  parseAuthConfig({auth_config: {secret_key: AUTH_SECRET, token_expire_in_minutes: 5}, user_config: [{api_keys: [{key: KEY, name: 'bench', quotas}], password: 'pw', permissions: ['models:read'], username: 'bench'}]}, 'bench.json'),
)
const caller = await access.authenticate(KEY)
const ledger = await UsageLedger.open()
const finished = {apiKey: 'bench', completed: true, completionTokens: 20, durationMs: 5, method: 'POST', modelUid: 'tiny', path: '/v1/chat/completions', promptTokens: 30, route: '/v1/chat/completions', status: 200, streamed: false}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]
const measure = (work: () => void) => {
  const rounds: number[] = []
  for (let round = 0; round < Number(values.rounds); round++) {
    const start = process.hrtime.bigint()
    for (let i = 0; i < requests; i++) work()
    rounds.push(Number(process.hrtime.bigint() - start) / requests)
  }

  return median(rounds)
}

console.log(`load average ${loadavg().map((n) => n.toFixed(2)).join(' ')}; ${requests} requests a round, ${values.rounds} rounds`)
const check = measure(() => access.checkQuotas(caller))
const count = measure(() => {
  access.quotas.countRequest('bench')
  access.quotas.countTokens('bench', 50)
})
const record = measure(() => ledger.record(finished))
console.log(`quota check ${check.toFixed(0)} ns, counting ${count.toFixed(0)} ns, ledger entry ${record.toFixed(0)} ns: ${(check + count + record).toFixed(0)} ns a request`)
