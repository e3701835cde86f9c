import {Flags} from '@oclif/core'
import {readFile} from 'node:fs/promises'

import {parseFamily} from '../kernel/catalogue.js'
import {ClientCommand} from '../cli/base-command.js'
import {canonicalModelType} from '../cli/model-types.js'

export default class Register extends ClientCommand<typeof Register> {
  static description = 'Register a custom model from a JSON file (Xinference family format; model_uri may be file:///path/to/model.gguf).'
  static examples = ['<%= config.bin %> register -t LLM -f my-model.json']
  static flags = {
    file: Flags.file({char: 'f', description: 'JSON file with the model family.', exists: true, required: true}),
    'model-type': Flags.string({char: 't', default: 'LLM', description: 'Model type.'}),
    persist: Flags.boolean({allowNo: true, default: true, description: 'Keep the registration across restarts.'}),
  }

  async run(): Promise<{model_name: string; model_type: string}> {
    const {file, persist} = this.flags
    let family: Record<string, unknown>
    try {
      family = parseFamily(await readFile(file, 'utf8'), file)
    } catch (error) {
      this.error((error as Error).message, {exit: 1})
    }

    const client = this.client()
    const {name: type} = await canonicalModelType(client, this.flags['model-type'])
    await client.register(type, family, persist)
    this.log(`Registered ${family.model_name} (${type}).`)
    return {model_name: String(family.model_name), model_type: type}
  }
}
