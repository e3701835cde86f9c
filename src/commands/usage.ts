import {Flags} from '@oclif/core'

import type {UsageReply} from '../protocol/usage.js'

import {ClientCommand} from '../cli/base-command.js'
import {USAGE_GROUPS, USAGE_WINDOWS} from '../protocol/usage.js'

export default class Usage extends ClientCommand<typeof Usage> {
  static description =
    'Show requests and tokens per API key (by its name) and model: every key for an admin, your own otherwise. Usage is kept by the hour, for 35 days, with access control on (--auth-config).'
  static examples = ['<%= config.bin %> usage', '<%= config.bin %> usage --window 7d --group-by key', '<%= config.bin %> usage --since 2026-11-01T00:00:00Z --key alice-laptop --json']
  static flags = {
    'group-by': Flags.string({default: 'key,model', description: 'Rows per key and model, per key, or per model.', options: [...USAGE_GROUPS]}),
    key: Flags.string({char: 'k', description: "Only this key's usage, by its name."}),
    since: Flags.string({description: 'The start, as an ISO 8601 time or seconds since the epoch (instead of --window).', exclusive: ['window']}),
    until: Flags.string({description: 'The end (now by default).'}),
    window: Flags.string({description: 'The period before --until (24h by default).', options: [...USAGE_WINDOWS]}),
  }

  async run(): Promise<UsageReply> {
    const {flags} = this
    const query = new URLSearchParams({group_by: flags['group-by']})
    for (const [name, value] of [['api_key', flags.key], ['since', flags.since], ['until', flags.until], ['window', flags.window]] as const) if (value) query.set(name, value)
    const usage = await this.client().request<UsageReply>('GET', `/v1/usage?${query}`)
    if (usage.data.length === 0) {
      this.log(`No requests ran a model from ${usage.since} to ${usage.until}.`)
      return usage
    }

    this.table(
      ['Key', 'Model', 'Requests', 'Prompt tokens', 'Completion tokens', 'Total tokens'],
      usage.data.map((row) => [row.api_key ?? (flags['group-by'] === 'model' ? '(all)' : '(none)'), row.model ?? '(all)', row.requests, row.prompt_tokens, row.completion_tokens, row.total_tokens]),
    )
    return usage
  }
}
