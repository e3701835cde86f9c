/**
 * Feeds each finished request into the usage ledger and, with access control on, each key's quota windows: a request
 * counts against them when it begins running on a model, its tokens when it ends. After a restart, the windows of the
 * day start from what the ledger kept of it, so a restart does not reset the daily quotas.
 */
import type {QuotaWindows} from '../auth/quota-windows.js'
import type {ServiceEvents} from '../kernel/observability.js'
import type {UsageLedger} from './usage-ledger.js'

export function accountUsage(events: ServiceEvents, ledger: UsageLedger, quotas?: QuotaWindows): void {
  if (quotas) for (const [key, {requests, tokens}] of ledger.today()) quotas.seedDay(key, requests, tokens)
  events.on('requestStarted', (event) => {
    if (event.apiKey !== undefined) quotas?.countRequest(event.apiKey)
  })
  events.on('request', (event) => {
    ledger.record(event)
    if (event.apiKey !== undefined) quotas?.countTokens(event.apiKey, (event.promptTokens ?? 0) + (event.completionTokens ?? 0))
  })
}
