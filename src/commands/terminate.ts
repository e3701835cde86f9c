import {Flags} from '@oclif/core'

import {ClientCommand} from '../cli/base-command.js'

export default class Terminate extends ClientCommand<typeof Terminate> {
  static description = 'Terminate a running model; its process exits and frees its memory.'
  static examples = ['<%= config.bin %> terminate --model-uid qwen2.5-instruct']
  static flags = {
    'model-uid': Flags.string({char: 'u', description: 'Uid of the model.', required: true}),
  }

  async run(): Promise<{model_uid: string; terminated: true}> {
    await this.client().terminate(this.flags['model-uid'])
    this.log(`Terminated ${this.flags['model-uid']}.`)
    return {model_uid: this.flags['model-uid'], terminated: true}
  }
}
