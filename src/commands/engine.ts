import {Flags} from '@oclif/core'

import {normalizeSize} from '../kernel/catalogue.js'
import {ClientCommand} from '../cli/base-command.js'
import {buildStatusLine} from '../cli/engine-build-status.js'

interface EngineRow {
  name: string
  engine: string
  format: string
  size: string
  quantization: string
}

export default class Engine extends ClientCommand<typeof Engine> {
  static description = 'Show which engine, format, size and quantization combinations a model can be launched with.'
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
    const engines = await this.client().engines(flags['model-name'])
    const rows: EngineRow[] = []
    const unavailable: string[] = []
    for (const [engine, specs] of Object.entries(engines)) {
      if (flags['model-engine'] && engine.toLowerCase() !== flags['model-engine'].toLowerCase()) continue
      if (typeof specs === 'string') {
        unavailable.push(`${engine}: ${specs}`)
        continue
      }

      for (const spec of specs) {
        if (flags['model-format'] && spec.model_format !== flags['model-format']) continue
        if (flags['size-in-billions'] && spec.model_size_in_billions !== normalizeSize(flags['size-in-billions'])) continue
        for (const quantization of spec.quantizations) {
          if (flags.quantization && quantization.toLowerCase() !== flags.quantization.toLowerCase()) continue
          rows.push({engine, format: spec.model_format, name: flags['model-name'], quantization, size: spec.model_size_in_billions})
        }
      }
    }

    if (rows.length === 0 && unavailable.length === 0)
      this.error(`no engine can run ${flags['model-name']} with the options given; run without filters to see every combination.`, {exit: 1})
    if (rows.length > 0)
      this.table(['Name', 'Engine', 'Format', 'Size (in billions)', 'Quantization'], rows.map((r) => [r.name, r.engine, r.format, r.size, r.quantization]))
    for (const line of unavailable) this.logToStderr(`Unavailable here: ${line}`)
    for (const engine of new Set(rows.map((row) => row.engine))) {
      const line = buildStatusLine(await this.client().engineBuild(engine).catch(() => undefined))
      if (line) this.logToStderr(line)
    }

    return rows
  }
}
