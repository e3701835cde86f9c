import {Args, Flags} from '@oclif/core'

import {JsonCommand} from '../cli/json-command.js'
import {isEngineKind, PLUGIN_KINDS, type PluginKind, ScaffoldError, scaffoldPlugin} from '../cli/scaffold.js'
import {shellQuote} from '../util/format.js'

export default class Scaffold extends JsonCommand {
  static args = {
    kind: Args.string({description: 'What the plugin adds; an external-engine runs each model as a program of its own (a Python server).', options: [...PLUGIN_KINDS], required: true}),
    name: Args.string({description: 'Name of the engine or model type, as users will type it (e.g. my-engine, classifier).', required: true}),
  }
  static description =
    'Create a new plugin (an engine, or a model type with its route) from a template: plain JavaScript, ready for `servicectl plugins link` with no build step.'
  static examples = [
    '<%= config.bin %> scaffold engine my-engine',
    '<%= config.bin %> scaffold external-engine my-server',
    '<%= config.bin %> scaffold model-type classifier --dir ./classifier-plugin',
  ]
  static flags = {
    dir: Flags.string({char: 'd', description: 'Directory to create; it must not exist or be empty [default: ./<package name>].'}),
  }

  async run(): Promise<{kind: PluginKind; name: string; package_name: string; directory: string; files: string[]; next: string[]}> {
    const {args, flags} = await this.parse(Scaffold)
    const kind = args.kind as PluginKind
    let result
    try {
      result = await scaffoldPlugin({directory: flags.dir, kind, name: args.name})
    } catch (error) {
      if (error instanceof ScaffoldError) this.error(error.message, {exit: 1})
      throw error
    }

    const {bin} = this.config
    const next = [
      `${bin} plugins link ${shellQuote(result.directory)}`,
      isEngineKind(kind)
        ? `${bin} launch --model-name ${result.slug}-demo --model-engine ${result.name}`
        : `${bin} launch --model-name ${result.slug}-demo`,
    ]
    this.log(`Created ${isEngineKind(kind) ? 'engine' : 'model type'} plugin ${result.packageName} in ${result.directory}:`)
    for (const file of result.files) this.log(`  ${file}`)
    this.log('')
    this.log(`Next: ${next[0]}`)
    this.log(`Then restart the service (plugins load when it starts) and try the demo model: ${next[1]}`)
    this.log('README.md in the plugin says what to edit.')
    return {directory: result.directory, files: result.files, kind, name: result.name, next, package_name: result.packageName}
  }
}
