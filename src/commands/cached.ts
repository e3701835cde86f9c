import {Flags} from '@oclif/core'

import type {CachedModel} from '../client/client.js'

import {ClientCommand} from '../cli/base-command.js'
import {formatBytes} from '../util/format.js'

export default class Cached extends ClientCommand<typeof Cached> {
  static description = `List the model versions in the weights cache, with their size on disk, source and folder.

A model version is named <model>--<size>B--<format>--<quantization>; \`servicectl remove-cache -n <version>\` deletes one. "partial" means a download was interrupted: the next launch resumes it.`
  static examples = ['<%= config.bin %> cached', '<%= config.bin %> cached -n qwen2.5-instruct --json']
  static flags = {
    'model-name': Flags.string({char: 'n', description: 'Only the versions of this model.'}),
  }

  async run(): Promise<CachedModel[]> {
    const name = this.flags['model-name']
    const models = await this.client().cachedModels(name)
    if (models.length === 0) {
      this.log(name ? `No cached model version matches --model-name ${name}; \`servicectl cached\` lists them all.` : 'There are no cached models.')
      return models
    }

    this.table(
      ['Model version', 'Hub', 'Repo', 'Disk size', 'Status', 'Path'],
      models.map((model) => [
        model.model_version,
        model.hub ?? 'local',
        model.repo ?? '',
        formatBytes(model.size_bytes + model.partial_bytes),
        model.complete ? 'complete' : `partial (${formatBytes(model.partial_bytes)} to resume)`,
        model.path,
      ]),
    )
    const total = models.reduce((sum, model) => sum + model.size_bytes + model.partial_bytes, 0)
    this.log(`\n${models.length} model version${models.length === 1 ? '' : 's'}, ${formatBytes(total)} in all.`)
    return models
  }
}
