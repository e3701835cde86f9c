import {Flags} from '@oclif/core'

import type {LaunchRecord} from '../protocol/events.js'

import {ClientCommand} from '../cli/base-command.js'

const time = (ms: number | null) => (ms === null ? '' : new Date(ms).toISOString())

export default class History extends ClientCommand<typeof History> {
  static description = 'Show the launch history, newest first: each launch with its engine, start, end and outcome (kept across restarts).'
  static examples = ['<%= config.bin %> history', '<%= config.bin %> history --model-name qwen2.5-instruct --json']
  static flags = {
    'model-name': Flags.string({char: 'n', description: 'Only the launches of this model.'}),
  }

  async run(): Promise<LaunchRecord[]> {
    const name = this.flags['model-name']
    const launches = await this.client().history(name)
    if (launches.length === 0) {
      this.log(name ? `No launch matches --model-name ${name}; \`servicectl history\` lists them all.` : 'No model has been launched yet.')
      return launches
    }

    this.table(
      ['UID', 'Name', 'Engine', 'Started', 'Ended', 'Outcome', 'Reason'],
      launches.map((launch) => [launch.model_uid, launch.model_name, launch.model_engine ?? '', time(launch.started), time(launch.ended), launch.outcome, launch.reason ?? '']),
    )
    return launches
  }
}
