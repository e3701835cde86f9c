import {Flags} from '@oclif/core'

import {ClientCommand} from '../cli/base-command.js'
import {CommandStopped} from '../cli/json-command.js'
import {confirm} from '../cli/prompt.js'

export default class RemoveCache extends ClientCommand<typeof RemoveCache> {
  static description = `Delete a model version from the weights cache, after listing its files and asking for confirmation.

The service refuses while a model that is running or launching uses the files. The next launch of that version downloads it again.`
  static examples = ['<%= config.bin %> remove-cache -n qwen2.5-instruct--0_5B--ggufv2--q4_k_m', '<%= config.bin %> remove-cache -n qwen2.5-instruct--0_5B--ggufv2--q4_k_m --check']
  static flags = {
    check: Flags.boolean({description: 'Delete without asking for confirmation.'}),
    'model-version': Flags.string({char: 'n', description: 'Model version, as `servicectl cached` lists it.', required: true}),
  }

  async run(): Promise<{model_version: string; paths: string[]; deleted: boolean}> {
    const version = this.flags['model-version']
    const client = this.client()
    const {paths} = await client.cachedModelFiles(version)
    if (!this.flags.check) {
      this.logToStderr(`These files will be deleted:\n${paths.map((path) => `  ${path}`).join('\n')}`)
      if (!(await confirm('Do you want to proceed with the deletion? (y/[n]) '))) throw new CommandStopped('declined', 'Declined: nothing was deleted.', 1)
    }

    const removed = await client.removeCachedModel(version)
    this.log(`Deleted ${version} (${removed.paths.length} file${removed.paths.length === 1 ? '' : 's'}).`)
    return {deleted: true, model_version: version, paths: removed.paths}
  }
}
