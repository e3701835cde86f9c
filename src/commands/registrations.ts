import {Flags} from '@oclif/core'

import {ClientCommand} from '../cli/base-command.js'

const COLUMNS: Record<string, Array<[string, string]>> = {
  LLM: [['Type', 'model_type'], ['Name', 'model_name'], ['Language', 'model_lang'], ['Ability', 'model_ability'], ['Context', 'context_length'], ['Is-built-in', 'is_builtin']],
  embedding: [['Type', 'model_type'], ['Name', 'model_name'], ['Language', 'language'], ['Dimensions', 'dimensions'], ['Max tokens', 'max_tokens'], ['Is-built-in', 'is_builtin']],
  rerank: [['Type', 'model_type'], ['Name', 'model_name'], ['Language', 'language'], ['Max tokens', 'max_tokens'], ['Is-built-in', 'is_builtin']],
}
const COMMON: Array<[string, string]> = [['Type', 'model_type'], ['Name', 'model_name'], ['Is-built-in', 'is_builtin']]

export default class Registrations extends ClientCommand<typeof Registrations> {
  static description = 'List the models that can be launched: built-in and registered ones.'
  static examples = ['<%= config.bin %> registrations', '<%= config.bin %> registrations -t embedding --json']
  static flags = {
    'model-type': Flags.string({char: 't', default: 'LLM', description: 'Model type.'}),
  }

  async run(): Promise<Array<Record<string, unknown>>> {
    const type = this.flags['model-type']
    const families: Array<Record<string, unknown>> = (await this.client().registrations(type, true)).map((family) => ({...family, model_type: type}))
    const columns = COLUMNS[type] ?? COMMON
    this.table(
      columns.map(([header]) => header),
      families.map((family) => columns.map(([, field]) => family[field])),
    )
    return families
  }
}
