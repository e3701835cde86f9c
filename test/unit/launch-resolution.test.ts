/** A launch whose engine cannot run the spec asked for names the engines that can, on the field it is refused on. */
import {expect} from 'chai'
import {join} from 'node:path'

import type {EngineDefinition} from '../../src/kernel/contracts.js'

import {resolveLaunch} from '../../src/cluster/launch-resolution.js'
import {createKernelApi, Kernel} from '../../src/kernel/kernel.js'
import {ModelRegistry} from '../../src/kernel/registry.js'
import {temporaryDirectory} from '../helpers/service.js'

const quiet = {debug() {}, error() {}, info() {}, warn() {}}
const api = createKernelApi('0.0.0', quiet)
const engine = (name: string, formats: string[]): EngineDefinition => ({formats, hostModule: '/nowhere.js', modelTypes: ['LLM'], name, parameters: {}})
const hub = (model_id: string, quantizations: string[], template?: string) => ({huggingface: {model_file_name_template: template, model_id, quantizations}})

describe('launch resolution', () => {
  let catalogue: {kernel: Kernel; registry: ModelRegistry}

  before(async () => {
    const kernel = Kernel.fromContributions(api, [
      {
        contribution: {
          catalogue: [
            {
              families: [
                {
                  model_ability: ['chat'],
                  model_name: 'demo',
                  model_specs: [
                    {model_format: 'ggufv2', model_size_in_billions: 1, model_src: hub('org/demo-GGUF', ['q4_0'], 'demo-{quantization}.gguf')},
                    {model_format: 'pytorch', model_size_in_billions: 1, model_src: hub('org/demo', ['none'])},
                    {model_format: 'awq', model_size_in_billions: 7, model_src: hub('org/demo-7b-AWQ', ['Int4'])},
                    {model_format: 'mlx', model_size_in_billions: 1, model_src: hub('mlx-community/demo-{quantization}', ['4bit'])},
                  ],
                },
              ],
              modelType: 'LLM',
            },
          ],
          engines: [engine('llama.cpp', ['ggufv2']), engine('vllm', ['pytorch', 'awq', 'gptq', 'fp8']), engine('sglang', ['pytorch', 'awq', 'gptq', 'fp8']), engine('MLX', ['mlx'])],
          modelTypes: [{defaultAbilities: ['chat'], description: 'LLM', name: 'LLM'}],
        },
        plugin: 'core',
      },
    ])
    catalogue = {kernel, registry: new ModelRegistry(kernel, join(await temporaryDirectory('resolution-'), 'registrations'), quiet)}
  })

  const refusal = (request: Record<string, unknown>) => {
    try {
      resolveLaunch(catalogue, {model_name: 'demo', model_type: 'LLM', ...request} as never)
    } catch (error) {
      return error as {message: string; param: string; status: number}
    }

    throw new Error('the launch was not refused')
  }

  it('names the engines that run the format asked for', () => {
    const error = refusal({model_engine: 'vllm', model_format: 'ggufv2'})
    expect(error).to.include({param: 'model_format', status: 400})
    expect(error.message).to.equal('model_format "ggufv2" is not available for demo with engine vllm; choose one of: pytorch, awq; the engines that can run it: llama.cpp.')
  })

  it('names the engines that have the size asked for, and those of a quantization format', () => {
    expect(refusal({model_engine: 'llama.cpp', size_in_billions: '7'})).to.include({
      message: 'size_in_billions "7" is not available for demo; choose one of: 1; the engines that can run it: sglang, vllm.',
      param: 'size_in_billions',
    })
    expect(refusal({model_engine: 'llama.cpp', model_format: 'mlx'}).message).to.match(/; the engines that can run it: MLX\.$/)
  })

  it('keeps a refusal no engine could get past as it is', () => {
    expect(refusal({model_engine: 'vllm', size_in_billions: '70'}).message).to.equal('size_in_billions "70" is not available for demo; choose one of: 1, 7.')
  })

  it('resolves a spec the engine runs', () => {
    const {engine: chosen, spec} = resolveLaunch(catalogue, {model_engine: 'vllm', model_format: 'awq', model_name: 'demo'} as never)
    expect([chosen.name, spec.model_id, spec.quantization]).to.deep.equal(['vllm', 'org/demo-7b-AWQ', 'Int4'])
  })
})
