import type {VirtualEnvironment} from '../client/index.js'

import {ClientCommand} from '../cli/base-command.js'
import {formatBytes} from '../util/format.js'

export default class Virtualenvs extends ClientCommand<typeof Virtualenvs> {
  static description = `List the Python virtual environments engines that run Python use, with their size, packages and the models using them.

One environment serves every model whose engine and registration ask for the same packages; \`servicectl remove-virtualenv -n <name>\` deletes one no model uses. Needs the admin permission when access control is on.`
  static examples = ['<%= config.bin %> virtualenvs', '<%= config.bin %> virtualenvs --json']

  async run(): Promise<Array<VirtualEnvironment & {worker: string}>> {
    const environments = await this.client().virtualEnvironments()
    if (environments.length === 0) {
      this.log('There are no Python environments.')
      return environments
    }

    this.table(
      ['Name', 'Python', 'Installer', 'Disk size', 'Models', 'Worker', 'Packages'],
      environments.map((environment) => [
        environment.name,
        environment.python,
        environment.installer,
        formatBytes(environment.size_bytes),
        environment.models.join(', ') || '(none)',
        environment.worker,
        environment.packages.join(' '),
      ]),
    )
    const total = environments.reduce((sum, environment) => sum + environment.size_bytes, 0)
    this.log(`\n${environments.length} environment${environments.length === 1 ? '' : 's'}, ${formatBytes(total)} in all.`)
    return environments
  }
}
