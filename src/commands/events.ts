import {Flags} from '@oclif/core'

import type {ModelEvent} from '../protocol/events.js'

import {ClientCommand} from '../cli/base-command.js'

/** What an event's details say in a table cell: `reason=…`, `percent=50 downloaded_bytes=…`. */
const detailsText = (details: Record<string, unknown>) =>
  Object.entries(details)
    .filter(([, value]) => value !== null && typeof value !== 'object')
    .map(([key, value]) => `${key}=${value}`)
    .join(' ')

export default class Events extends ClientCommand<typeof Events> {
  static description = "Show a model's events: launch, download milestones, loading, ready, crash with its reason, terminate."
  static examples = ['<%= config.bin %> events --model-uid qwen2.5-instruct', '<%= config.bin %> events -u qwen2.5-instruct --json']
  static flags = {
    'model-uid': Flags.string({char: 'u', description: 'Uid of the model (it may have ended a while ago).', required: true}),
  }

  async run(): Promise<ModelEvent[]> {
    const events = await this.client().events(this.flags['model-uid'])
    this.table(
      ['Time', 'Kind', 'Level', 'Event', 'Details'],
      events.map((event) => [new Date(event.timestamp).toISOString(), event.kind, event.event_type, event.event_content, detailsText(event.details)]),
    )
    return events
  }
}
