import type {VllmSupportedModels} from '../protocol/engine-models.js'

import {ClientCommand} from '../cli/base-command.js'

const listed = (names: string[]) => (names.length > 0 ? names.join(', ') : '(none)')

export default class VllmModels extends ClientCommand<typeof VllmModels> {
  static description = 'List the LLM families the vLLM engine can serve: those with a pytorch (safetensors), AWQ, GPTQ or FP8 spec.'
  static examples = ['<%= config.bin %> vllm-models', '<%= config.bin %> vllm-models --json']

  async run(): Promise<VllmSupportedModels> {
    const models = await this.client().vllmModels()
    this.log(`VLLM supported chat model families: ${listed(models.chat)}`)
    this.log(`VLLM supported generate model families: ${listed(models.generate)}`)
    return models
  }
}
