import {Flags} from '@oclif/core'

import {ClientCommand} from '../cli/base-command.js'
import {CommandStopped} from '../cli/json-command.js'
import {confirm} from '../cli/prompt.js'

export default class RemoveVirtualenv extends ClientCommand<typeof RemoveVirtualenv> {
  static description = `Delete a Python virtual environment, after asking for confirmation.

The service refuses while a model that is running or launching uses it. The next launch that needs its packages makes it again. Needs the admin permission when access control is on.`
  static examples = ['<%= config.bin %> remove-virtualenv -n py3.11.7-5ee4d84623691b5e', '<%= config.bin %> remove-virtualenv -n py3.11.7-5ee4d84623691b5e --check']
  static flags = {
    check: Flags.boolean({description: 'Delete without asking for confirmation.'}),
    name: Flags.string({char: 'n', description: 'The environment, as `servicectl virtualenvs` lists it.', required: true}),
  }

  async run(): Promise<{name: string; paths: string[]; deleted: boolean}> {
    const {check, name} = this.flags
    if (!check && !(await confirm(`Delete the Python environment ${name}? (y/[n]) `))) throw new CommandStopped('declined', 'Declined: nothing was deleted.', 1)

    const removed = await this.client().removeVirtualEnvironment(name)
    this.log(`Deleted ${name} (${removed.paths.join(', ')}).`)
    return {deleted: true, ...removed}
  }
}
