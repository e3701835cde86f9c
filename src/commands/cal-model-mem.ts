import {Flags} from '@oclif/core'

import type {MemoryEstimate} from '../client/client.js'

import {ClientCommand} from '../cli/base-command.js'
import {splitEngineOptions} from '../cli/extra-options.js'
import {memoryEstimateLines} from '../cli/memory-estimate-lines.js'

export default class CalModelMem extends ClientCommand<typeof CalModelMem> {
  static description = `Estimate the memory a model needs: its weights, the KV cache at a context length, and compute buffers.

The numbers come from the GGUF file's header, read from the cache or, when the model is not cached, from the hub with a few small range requests (nothing is downloaded). A GGUF image model's weights are its file's size with the companion files a launch downloads beside it (VAE, text encoders), each from the cache or the hub's metadata. Other \`--name value\` pairs are engine parameters, as for launch (for example --n_parallel 8).`
  static examples = ['<%= config.bin %> cal-model-mem -n qwen2.5-instruct -s 0_5 -f ggufv2 -q q4_k_m -c 4096', '<%= config.bin %> cal-model-mem -n qwen3 -s 8 -q Q4_K_M -c 32768 --n_parallel 1']
  static flags = {
    'context-length': Flags.integer({
      char: 'c',
      description: "Context length per request, in tokens, at most the model's trained context [default: as a launch: for llama.cpp 4096 for an LLM, the trained context for embedding and rerank].",
      min: 16,
    }),
    'download-hub': Flags.option({description: 'Hub to read the header from when the model is not cached.', options: ['huggingface', 'modelscope'] as const})(),
    'model-engine': Flags.string({description: 'Engine (also -en) [default: the first that can estimate the model].'}),
    'model-format': Flags.string({char: 'f', description: 'Model format, e.g. ggufv2.'}),
    'model-name': Flags.string({char: 'n', description: 'Name of a registered model.', required: true}),
    quantization: Flags.string({char: 'q', description: 'Quantization, e.g. q4_k_m.'}),
    'size-in-billions': Flags.string({char: 's', description: 'Size in billions, e.g. 7 or 0_5.'}),
  }
  private engineOptions: Record<string, string> = {}

  async init(): Promise<void> {
    const {engineOptions, rest} = splitEngineOptions(this.argv, CalModelMem.flags, ClientCommand.baseFlags)
    this.engineOptions = engineOptions
    this.argv = rest
    await super.init()
  }

  async run(): Promise<MemoryEstimate> {
    const {flags} = this
    const estimate = await this.client().estimateMemory({
      ...this.engineOptions,
      context_length: flags['context-length'],
      download_hub: flags['download-hub'],
      model_engine: flags['model-engine'],
      model_format: flags['model-format'],
      model_name: flags['model-name'],
      quantization: flags.quantization,
      size_in_billions: flags['size-in-billions'],
    })
    for (const line of memoryEstimateLines(estimate)) this.log(line)
    return estimate
  }
}
