import type {VirtualEnvironment} from '../client/index.js'

import {ClientCommand} from '../cli/base-command.js'
import {formatBytes} from '../util/format.js'

export default class Virtualenvs extends ClientCommand<typeof Virtualenvs> {
  static description = `List the Python virtual environments engines that run Python use, with their size, packages and the models using them.

Size is an environment's files as if it were alone; Shared is the part of it hard-linked into other environments of its worker (uv links the same package files from one cache), so the total counts those files once.

One environment serves every model whose engine and registration ask for the same packages; \`servicectl remove-virtualenv -n <name>\` deletes one no model uses. Needs the admin permission when access control is on.`
  static examples = ['<%= config.bin %> virtualenvs', '<%= config.bin %> virtualenvs --json']

  async run(): Promise<Array<VirtualEnvironment & {worker: string}>> {
    const environments = await this.client().virtualEnvironments()
    if (environments.length === 0) {
      this.log('There are no Python environments.')
      return environments
    }

    this.table(
      ['Name', 'Python', 'Installer', 'Size', 'Shared', 'Models', 'Worker', 'Packages'],
      environments.map((environment) => [
        environment.name,
        environment.python,
        environment.installer,
        formatBytes(environment.size_bytes),
        formatBytes(environment.shared_bytes),
        environment.models.join(', ') || '(none)',
        environment.worker,
        environment.packages.join(' '),
      ]),
    )
    const onDisk = environments.reduce((sum, environment) => sum + environment.disk_bytes, 0)
    const alone = environments.reduce((sum, environment) => sum + environment.size_bytes, 0)
    this.log(`\n${environments.length} environment${environments.length === 1 ? '' : 's'}, ${formatBytes(onDisk)} on disk in all (${formatBytes(alone)} if none shared a file).`)
    return environments
  }
}
