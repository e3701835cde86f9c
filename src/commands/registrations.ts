import {Flags} from '@oclif/core'

import {ClientCommand} from '../cli/base-command.js'
import {canonicalModelType} from '../cli/model-types.js'

type Column = {header: string; field: string}

/** What every model type shows around the columns its plugin names (`registrationColumns`, by /v1/cluster/plugins). */
const FIRST: Column = {field: 'model_type', header: 'Type'}
const LAST: Column = {field: 'is_builtin', header: 'Is-built-in'}
const NAME_ONLY: Column[] = [{field: 'model_name', header: 'Name'}]

export default class Registrations extends ClientCommand<typeof Registrations> {
  static description = 'List the models that can be launched: built-in and registered ones.'
  static examples = ['<%= config.bin %> registrations', '<%= config.bin %> registrations -t embedding --json']
  static flags = {
    'model-type': Flags.string({char: 't', default: 'LLM', description: 'Model type.'}),
  }

  async run(): Promise<Array<Record<string, unknown>>> {
    const client = this.client()
    const {name: type, plugins} = await canonicalModelType(client, this.flags['model-type'])
    const families: Array<Record<string, unknown>> = (await client.registrations(type, true)).map((family) => ({...family, model_type: type}))
    const columns = [FIRST, ...(plugins.registration_columns[type] ?? NAME_ONLY), LAST]
    this.table(
      columns.map(({header}) => header),
      families.map((family) => columns.map(({field}) => family[field])),
    )
    return families
  }
}
