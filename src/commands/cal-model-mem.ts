import {Flags} from '@oclif/core'

import type {MemoryEstimate} from '../client/client.js'

import {ClientCommand} from '../cli/base-command.js'
import {splitEngineOptions} from '../cli/extra-options.js'
import {formatBytes} from '../util/format.js'

export default class CalModelMem extends ClientCommand<typeof CalModelMem> {
  static description = `Estimate the memory a model needs: its weights, the KV cache at a context length, and compute buffers.

The numbers come from the GGUF file's header, read from the cache or, when the model is not cached, from the hub with a few small range requests (nothing is downloaded). Other \`--name value\` pairs are engine parameters, as for launch (for example --n_parallel 8).`
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
    const size = (bytes: number) => `${formatBytes(bytes)} (${bytes} bytes)`
    const parallel = typeof estimate.parallel === 'number' ? ` × ${estimate.parallel} parallel sequence${estimate.parallel === 1 ? '' : 's'}` : ''
    this.log(`Model version:  ${estimate.model_version} (header read from ${['cache', 'generated', 'local'].includes(estimate.source) ? 'the local file' : estimate.source})`)
    this.log(`Context:        ${estimate.context_length} tokens${parallel}`)
    this.log(`Weights:        ${size(estimate.weights_bytes)}`)
    this.log(`KV cache:       ${size(estimate.kv_cache_bytes)}`)
    this.log(`Overhead:       ${size(estimate.overhead_bytes)}`)
    this.log(`Total:          ${size(estimate.total_bytes)}`)
    return estimate
  }
}
