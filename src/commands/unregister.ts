import {Flags} from '@oclif/core'

import {ClientCommand} from '../cli/base-command.js'

export default class Unregister extends ClientCommand<typeof Unregister> {
  static description = 'Unregister a custom model.'
  static examples = ['<%= config.bin %> unregister -t LLM -n my-model']
  static flags = {
    'model-name': Flags.string({char: 'n', description: 'Name of the custom model.', required: true}),
    'model-type': Flags.string({char: 't', default: 'LLM', description: 'Model type.'}),
  }

  async run(): Promise<{model_name: string; model_type: string}> {
    await this.client().unregister(this.flags['model-type'], this.flags['model-name'])
    this.log(`Unregistered ${this.flags['model-name']}.`)
    return {model_name: this.flags['model-name'], model_type: this.flags['model-type']}
  }
}
