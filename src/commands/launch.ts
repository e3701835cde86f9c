import {Flags} from '@oclif/core'

import type {LaunchOptions} from '../client/client.js'

import {ClientCommand} from '../lib/base-command.js'
import {splitEngineOptions} from '../lib/extra-options.js'

export default class Launch extends ClientCommand<typeof Launch> {
  static description = 'Launch a model. Any other `--name value` pair is passed to the engine (for example --n_ctx 4096).'
  static examples = [
    '<%= config.bin %> launch -n qwen2.5-instruct --model-engine llama.cpp -f ggufv2 -s 0_5 -q q4_0',
    '<%= config.bin %> launch -n my-model --model-engine llama.cpp --n_ctx 2048 --n_parallel 8',
  ]
  static flags = {
    'download-hub': Flags.option({description: 'Hub to download weights from.', options: ['huggingface', 'modelscope'] as const})(),
    'model-engine': Flags.string({description: 'Engine (also -en): llama.cpp, vllm, sglang, transformers, MLX; required for LLM.'}),
    'model-format': Flags.string({char: 'f', description: 'Model format, e.g. ggufv2.'}),
    'model-name': Flags.string({char: 'n', description: 'Name of a registered model.', required: true}),
    'model-type': Flags.string({char: 't', description: 'Model type (found from the catalogue when omitted).'}),
    'model-uid': Flags.string({char: 'u', description: 'Uid for the running model [default: the model name].'}),
    'n-gpu': Flags.string({description: '"auto", or a number of GPUs.'}),
    quantization: Flags.string({char: 'q', description: 'Quantization, e.g. q4_0.'}),
    replica: Flags.integer({char: 'r', description: 'Number of instances.', min: 1}),
    'size-in-billions': Flags.string({char: 's', description: 'Size in billions, e.g. 7 or 0_5.'}),
  }
  private engineOptions: Record<string, string> = {}

  /** Engine parameters are taken out of argv before oclif parses it, since oclif refuses undeclared flags. */
  async init(): Promise<void> {
    const {engineOptions, rest} = splitEngineOptions(this.argv, Launch.flags, ClientCommand.baseFlags)
    this.engineOptions = engineOptions
    this.argv = rest
    await super.init()
  }

  async run(): Promise<{model_uid: string}> {
    const {flags} = this
    const options: LaunchOptions = {
      ...this.engineOptions,
      download_hub: flags['download-hub'],
      model_engine: flags['model-engine'],
      model_format: flags['model-format'],
      model_name: flags['model-name'],
      model_type: flags['model-type'],
      model_uid: flags['model-uid'],
      n_gpu: flags['n-gpu'] === undefined ? undefined : flags['n-gpu'] === 'auto' ? 'auto' : Number(flags['n-gpu']),
      quantization: flags.quantization,
      replica: flags.replica,
      size_in_billions: flags['size-in-billions'],
    }
    const uid = await this.client().launch(options)
    this.log(`Model uid: ${uid}`)
    return {model_uid: uid}
  }
}
