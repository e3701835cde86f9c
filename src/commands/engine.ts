import {Flags} from '@oclif/core'

import {ServiceError} from '../kernel/errors.js'
import {ClientCommand} from '../cli/base-command.js'
import {buildStatusLine} from '../cli/engine-build-status.js'
import {engineCombinations, type EngineRow, unavailableRows} from '../cli/engine-combinations.js'

export default class Engine extends ClientCommand<typeof Engine> {
  static description = 'Show which engine, format, size and quantization combinations a model can be launched with, and why those the workers cannot run are unavailable.'
  static examples = ['<%= config.bin %> engine -n qwen2.5-instruct', '<%= config.bin %> engine -n qwen2.5-instruct --model-engine llama.cpp -s 0_5']
  static flags = {
    'model-engine': Flags.string({description: 'Only this engine (also -en).'}),
    'model-format': Flags.string({char: 'f', description: 'Only this format.'}),
    'model-name': Flags.string({char: 'n', description: 'Model name.', required: true}),
    quantization: Flags.string({char: 'q', description: 'Only this quantization.'}),
    'size-in-billions': Flags.string({char: 's', description: 'Only this size.'}),
  }

  async run(): Promise<EngineRow[]> {
    const {flags} = this
    const model = flags['model-name']
    const filters = {engine: flags['model-engine'], format: flags['model-format'], quantization: flags.quantization, size: flags['size-in-billions']}
    const {rows, unavailable, unmatched} = engineCombinations(model, await this.client().engines(model), filters)
    if (unmatched) throw new ServiceError(404, 'not_found', unmatched)
    if (rows.length === 0 && unavailable.length === 0) throw new ServiceError(404, 'not_found', `no engine can run ${model}.`)
    if (rows.length > 0)
      this.table(['Name', 'Engine', 'Format', 'Size (in billions)', 'Quantization', 'Available'], rows.map((r) => [r.name, r.engine, r.format, r.size, r.quantization, r.available ? 'yes' : 'no']))
    for (const line of [...unavailable, ...unavailableRows(rows)]) this.logToStderr(`Unavailable here: ${line}`)
    for (const engine of new Set(rows.filter((row) => row.available).map((row) => row.engine))) {
      const line = buildStatusLine(await this.client().engineBuild(engine).catch(() => undefined))
      if (line) this.logToStderr(line)
    }

    return rows
  }
}
