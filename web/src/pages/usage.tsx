/**
 * Usage: requests and tokens per API key and model over a period, from `GET /v1/usage`. An admin sees every key;
 * anyone else only their own (the service decides; the page shows what it answers).
 */
import type {UsageReply} from '../../../src/protocol/usage.js'

import {useState} from 'preact/hooks'

import {client} from '../api.js'
import {ErrorLine, Table, useLoad} from '../ui.js'

const REFRESH_MS = 10_000
const WINDOWS: Array<[string, string]> = [
  ['1h', 'last hour'],
  ['24h', 'last 24 hours'],
  ['7d', 'last 7 days'],
  ['30d', 'last 30 days'],
]
const GROUPS: Array<[string, string]> = [
  ['key,model', 'key and model'],
  ['key', 'key'],
  ['model', 'model'],
]

const count = (value: number) => value.toLocaleString()

export function UsagePage() {
  const [period, setPeriod] = useState('24h')
  const [groupBy, setGroupBy] = useState('key,model')
  const usage = useLoad(() => client.request<UsageReply>('GET', `/v1/usage?${new URLSearchParams({group_by: groupBy, window: period})}`), [period, groupBy], {everyMs: REFRESH_MS, whenShown: true})
  const rows = usage.data?.data ?? []
  const total = rows.reduce((sum, row) => ({requests: sum.requests + row.requests, tokens: sum.tokens + row.total_tokens}), {requests: 0, tokens: 0})
  return (
    <section>
      <h1>Usage</h1>
      <form class="filters" onSubmit={(event) => event.preventDefault()}>
        <label>
          Period
          <select onChange={(event) => setPeriod(event.currentTarget.value)} value={period}>
            {WINDOWS.map(([value, label]) => (
              <option key={value} value={value}>
                {label}
              </option>
            ))}
          </select>
        </label>
        <label>
          By
          <select onChange={(event) => setGroupBy(event.currentTarget.value)} value={groupBy}>
            {GROUPS.map(([value, label]) => (
              <option key={value} value={value}>
                {label}
              </option>
            ))}
          </select>
        </label>
      </form>
      <ErrorLine error={usage.error} />
      {usage.data && (
        <p class="muted">
          {count(total.requests)} requests and {count(total.tokens)} tokens since {new Date(usage.data.since).toLocaleString()}, counted by the hour
        </p>
      )}
      {rows.length > 0 && (
        <Table headings={['API key', 'Model', 'Requests', 'Prompt tokens', 'Completion tokens', 'Total tokens']}>
          {rows.map((row) => (
            <tr key={`${row.api_key}/${row.model}`}>
              <th scope="row">{row.api_key ?? (groupBy === 'model' ? 'all' : 'none (no access control)')}</th>
              <td>{row.model ?? 'all'}</td>
              <td>{count(row.requests)}</td>
              <td>{count(row.prompt_tokens)}</td>
              <td>{count(row.completion_tokens)}</td>
              <td>{count(row.total_tokens)}</td>
            </tr>
          ))}
        </Table>
      )}
    </section>
  )
}
