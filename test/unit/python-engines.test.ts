/**
 * The vLLM, SGLang and MLX engines' programs: the command each builds from a launch (its parameters passed through as
 * the program's flags, GPUs as tensor parallelism), the parameters each validates, and where each can run.
 */
import {expect} from 'chai'
import {mkdtempSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

import type {EngineDefinition} from '../../src/kernel/contracts.js'

import {commandLineFlags} from '../../src/kernel/command-line-flags.js'
import {engineParameters} from '../../src/protocol/engine-parameters.js'
import {MLX_PARAMETERS, mlxAvailability, mlxCommand} from '../../plugins/engine-mlx/src/server-command.js'
import {sglangAvailability} from '../../plugins/engine-sglang/src/register.js'
import {SGLANG_PARAMETERS, sglangCommand} from '../../plugins/engine-sglang/src/server-command.js'
import {vllmAvailability} from '../../plugins/engine-vllm/src/register.js'
import {VLLM_PARAMETERS, vllmCommand} from '../../plugins/engine-vllm/src/server-command.js'
import {toolCallFormatOf} from '../../src/kernel/tool-call-format.js'

const launch = {port: 41234, python: '/home/.service/virtualenv/abc/bin/python'}
const vllmLaunch = {...launch, startupDir: '/plugins/engine-vllm/python'}
const load = (parameters: Record<string, unknown>, devices?: number[]) => ({devices, modelPath: '/cache/qwen2.5-instruct--0_5B--pytorch--none', modelUid: 'my-qwen', parameters})
const engine = (name: string, parameters: EngineDefinition['parameters']): EngineDefinition => ({formats: ['pytorch'], hostModule: '/unused.js', modelTypes: ['LLM'], name, parameters})
const refusal = (definition: EngineDefinition, request: Record<string, unknown>) => {
  try {
    engineParameters(definition, {model_name: 'qwen2.5-instruct', ...request} as never)
  } catch (error) {
    return error as {message: string; param: string; status: number}
  }

  throw new Error('the parameters were accepted')
}

describe('Python engines: vLLM, SGLang, MLX', () => {
  describe('command-line flags', () => {
    it('writes parameters as dashed flags, booleans bare, false ones negated only where the program takes --no-', () => {
      const parameters = {enforce_eager: true, gpu_memory_utilization: 0.9, max_model_len: 4096, trust_remote_code: false}
      expect(commandLineFlags(parameters)).to.deep.equal(['--enforce-eager', '--gpu-memory-utilization', '0.9', '--max-model-len', '4096'])
      expect(commandLineFlags(parameters, {negatableBooleans: true})).to.deep.equal(['--enforce-eager', '--gpu-memory-utilization', '0.9', '--max-model-len', '4096', '--no-trust-remote-code'])
    })

    it('splits the model across the launch\'s GPUs with the parameter named, unless the launch sets it or has one GPU', () => {
      const splitAcross = (devices?: number[]) => ({splitAcross: {devices, parameter: 'tp_size'}})
      expect(commandLineFlags({dtype: 'half'}, splitAcross([0, 1, 2]))).to.deep.equal(['--dtype', 'half', '--tp-size', '3'])
      expect(commandLineFlags({tp_size: 1, dtype: 'half'}, splitAcross([0, 1, 2]))).to.deep.equal(['--tp-size', '1', '--dtype', 'half'])
      expect(commandLineFlags({dtype: 'half'}, splitAcross([2]))).to.deep.equal(['--dtype', 'half'])
      expect(commandLineFlags({dtype: 'half'}, splitAcross())).to.deep.equal(['--dtype', 'half'])
    })
  })

  describe('reasoning parsers', () => {
    const qwen3 = {model_ability: ['chat', 'reasoning', 'hybrid'], model_name: 'qwen3', reasoning_start_tag: '<think>'}
    const r1 = {model_ability: ['chat', 'reasoning'], model_name: 'deepseek-r1-distill-qwen', reasoning_start_tag: '<think>'}
    const parserOf = (args: string[]) => (args.includes('--reasoning-parser') ? args[args.indexOf('--reasoning-parser') + 1] : undefined)

    it("gives vLLM and SGLang the parser of a reasoning family, in each one's name, unless the launch names one", () => {
      expect(parserOf(vllmCommand({...load({}), family: qwen3}, vllmLaunch, commandLineFlags).args)).to.equal('qwen3')
      expect(parserOf(vllmCommand({...load({}), family: r1}, vllmLaunch, commandLineFlags).args)).to.equal('deepseek_r1')
      expect(parserOf(sglangCommand({...load({}), family: r1}, launch, commandLineFlags).args)).to.equal('deepseek-r1')
      expect(parserOf(sglangCommand({...load({}), family: {model_ability: ['chat', 'reasoning'], model_name: 'gpt-oss'}}, launch, commandLineFlags).args)).to.equal('gpt-oss')
      expect(parserOf(vllmCommand({...load({reasoning_parser: 'deepseek_r1'}), family: qwen3}, vllmLaunch, commandLineFlags).args)).to.equal('deepseek_r1')
      expect(parserOf(sglangCommand({...load({reasoning_parser: 'qwen3'}), family: r1}, launch, commandLineFlags).args)).to.equal('qwen3')
    })

    it('gives none to a model that does not reason, or whose tags no parser of theirs reads', () => {
      expect(parserOf(vllmCommand({...load({}), family: {model_ability: ['chat'], model_name: 'qwen2.5-instruct'}}, vllmLaunch, commandLineFlags).args)).to.equal(undefined)
      expect(parserOf(sglangCommand({...load({}), family: {...r1, reasoning_start_tag: '◁think▷'}}, launch, commandLineFlags).args)).to.equal(undefined)
    })
  })

  describe('tool-call parsers', () => {
    const flagOf = (args: string[], flag: string) => (args.includes(flag) ? args[args.indexOf(flag) + 1] : undefined)
    /** The launch as each engine's register makes it: the format from the family and the template files beside the weights. */
    const launchOf = (family: Record<string, unknown>, parameters: Record<string, unknown> = {}, modelPath = '/cache/none') => {
      const request = {...load(parameters), family: {model_name: 'm', ...family}, modelPath}
      return {...request, toolCallFormat: toolCallFormatOf(request)}
    }

    const mistralFolder = mkdtempSync(join(tmpdir(), 'mistral-template-'))
    writeFileSync(join(mistralFolder, 'tokenizer_config.json'), JSON.stringify({chat_template: '{%- if message.tool_calls %}{{ "[TOOL_CALLS]" }}{% endif %}'}))

    it("starts vLLM with auto tool choice and the parser of the family's format, from its tool_parser or its chat template", () => {
      const vllm = (family: Record<string, unknown>, parameters?: Record<string, unknown>, modelPath?: string) => vllmCommand(launchOf(family, parameters, modelPath), vllmLaunch, commandLineFlags).args
      expect(flagOf(vllm({tool_parser: 'qwen'}), '--tool-call-parser')).to.equal('hermes')
      expect(vllm({tool_parser: 'qwen'})).to.include('--enable-auto-tool-choice')
      expect(flagOf(vllm({tool_parser: 'llama3'}), '--tool-call-parser')).to.equal('llama3_json')
      expect(flagOf(vllm({}, {}, mistralFolder), '--tool-call-parser')).to.equal('mistral')
      expect(flagOf(vllm({chat_template: '{{ "<tool_call>" }}'}), '--tool-call-parser')).to.equal('hermes')
      const unknown = vllm({})
      expect(unknown).not.to.include('--tool-call-parser')
      expect(unknown).not.to.include('--enable-auto-tool-choice')
    })

    it("lets the launch name vLLM's parser, or turn auto tool choice off", () => {
      const vllm = (parameters: Record<string, unknown>) => vllmCommand(launchOf({tool_parser: 'qwen'}, parameters), vllmLaunch, commandLineFlags).args
      expect(flagOf(vllm({tool_call_parser: 'qwen3_coder'}), '--tool-call-parser')).to.equal('qwen3_coder')
      expect(vllm({tool_call_parser: 'qwen3_coder'}).filter((flag) => flag === '--enable-auto-tool-choice')).to.have.length(1)
      expect(vllm({enable_auto_tool_choice: false})).to.include('--no-enable-auto-tool-choice')
      expect(vllm({enable_auto_tool_choice: false})).not.to.include('--tool-call-parser')
    })

    it("starts SGLang with its parser of the family's format, in SGLang's names, unless the launch names one", () => {
      const sglang = (family: Record<string, unknown>, parameters?: Record<string, unknown>, modelPath?: string) => flagOf(sglangCommand(launchOf(family, parameters, modelPath), launch, commandLineFlags).args, '--tool-call-parser')
      expect(sglang({tool_parser: 'qwen'})).to.equal('qwen25')
      expect(sglang({tool_parser: 'llama3'})).to.equal('llama3')
      expect(sglang({}, {}, mistralFolder)).to.equal('mistral')
      expect(sglang({tool_parser: 'qwen'}, {tool_call_parser: 'qwen3_coder'})).to.equal('qwen3_coder')
      expect(sglang({})).to.equal(undefined)
    })
  })

  describe('vLLM', () => {
    it('runs vLLM\'s OpenAI server with the environment\'s interpreter on the kernel\'s port, serving the model under its uid, fetching no pictures itself', () => {
      const command = vllmCommand(load({dtype: 'bfloat16', enable_prefix_caching: false, gpu_memory_utilization: 0.85, max_model_len: 2048}), vllmLaunch, commandLineFlags)
      expect(command.file).to.equal(launch.python)
      expect(command.args).to.deep.equal([
        '-m', 'vllm.entrypoints.openai.api_server', '--model', '/cache/qwen2.5-instruct--0_5B--pytorch--none',
        '--host', '127.0.0.1', '--port', '41234', '--served-model-name', 'my-qwen', '--allowed-media-domains', 'invalid',
        '--dtype', 'bfloat16', '--no-enable-prefix-caching', '--gpu-memory-utilization', '0.85', '--max-model-len', '2048',
      ])
      expect(command.env).to.deep.equal({HF_HUB_OFFLINE: '1', PYTHONPATH: '/plugins/engine-vllm/python', VLLM_NO_USAGE_STATS: '1'})
      expect(vllmCommand(load({}), {...vllmLaunch, pythonPath: '/opt/lib'}, commandLineFlags).env?.PYTHONPATH).to.equal('/plugins/engine-vllm/python:/opt/lib')
    })

    it('splits a model across the GPUs it was given unless told otherwise, and puts the CPU backend\'s settings in its environment', () => {
      expect(vllmCommand(load({}, [0, 1]), vllmLaunch, commandLineFlags).args.slice(-2)).to.deep.equal(['--tensor-parallel-size', '2'])
      expect(vllmCommand(load({tensor_parallel_size: 1}, [0, 1]), vllmLaunch, commandLineFlags).args.slice(-2)).to.deep.equal(['--tensor-parallel-size', '1'])
      expect(vllmCommand(load({}, [3]), vllmLaunch, commandLineFlags).args).not.to.include('--tensor-parallel-size')
      // Pipeline stages take their share of the GPUs: 4 GPUs in 2 stages are 2-way tensor parallel; 3 in 2 have no even split.
      expect(vllmCommand(load({pipeline_parallel_size: 2}, [0, 1, 2, 3]), vllmLaunch, commandLineFlags).args.slice(-2)).to.deep.equal(['--tensor-parallel-size', '2'])
      expect(vllmCommand(load({pipeline_parallel_size: 2}, [0, 1, 2]), vllmLaunch, commandLineFlags).args).not.to.include('--tensor-parallel-size')
      const cpu = vllmCommand(load({cpu_kvcache_space: 2}), vllmLaunch, commandLineFlags)
      expect(cpu.env).to.include({VLLM_CPU_KVCACHE_SPACE: '2'})
      expect(cpu.args).not.to.include('--cpu-kvcache-space')
    })

    it('validates its parameters before anything starts, naming the field', () => {
      const vllm = engine('vllm', VLLM_PARAMETERS)
      expect(engineParameters(vllm, {gpu_memory_utilization: '0.9', max_model_len: '4096', model_name: 'x', trust_remote_code: 'true'} as never)).to.deep.equal({gpu_memory_utilization: 0.9, max_model_len: 4096, trust_remote_code: true})
      // The launch's quantization picks the spec (AWQ's Int4); vLLM reads the method from the model, so it is not passed on.
      expect(engineParameters(vllm, {model_name: 'x', quantization: 'Int4'} as never)).to.deep.equal({})
      expect(refusal(vllm, {gpu_memory_utilization: 1.5})).to.include({param: 'gpu_memory_utilization', status: 400})
      expect(refusal(vllm, {dtype: 'float8'})).to.include({param: 'dtype', status: 400})
      const unknown = refusal(vllm, {n_ctx: 4096})
      expect(unknown).to.include({param: 'n_ctx', status: 400})
      expect(unknown.message).to.match(/^unknown parameter "n_ctx" for engine vllm; it accepts: chat_template, cpu_kvcache_space, dtype, .*max_model_len.*, trust_remote_code\.$/)
    })

    it('runs on Linux and says what to use elsewhere', () => {
      expect(vllmAvailability('linux', 'x64')).to.equal(true)
      expect(vllmAvailability('darwin', 'arm64')).to.equal('vLLM runs on Linux (with an NVIDIA GPU, or its CPU build on x86_64 and arm64), and this machine is darwin on arm64; use MLX (Apple silicon), llama.cpp (GGUF, any machine) or transformers instead.')
    })
  })

  describe('SGLang', () => {
    it('runs `sglang.launch_server` on the kernel\'s port under the model\'s uid, leaving false switches out', () => {
      const command = sglangCommand(load({context_length: 8192, disable_radix_cache: false, mem_fraction_static: 0.8, trust_remote_code: true}), launch, commandLineFlags)
      expect(command.file).to.equal(launch.python)
      expect(command.args).to.deep.equal([
        '-m', 'sglang.launch_server', '--model-path', '/cache/qwen2.5-instruct--0_5B--pytorch--none',
        '--host', '127.0.0.1', '--port', '41234', '--served-model-name', 'my-qwen',
        '--context-length', '8192', '--mem-fraction-static', '0.8', '--trust-remote-code',
      ])
      expect(sglangCommand(load({}, [0, 1, 2]), launch, commandLineFlags).args.slice(-2)).to.deep.equal(['--tp-size', '3'])
      expect(sglangCommand(load({dp_size: 2}, [0, 1, 2, 3]), launch, commandLineFlags).args.slice(-2)).to.deep.equal(['--tp-size', '2'])
    })

    it('validates its parameters', () => {
      const sglang = engine('sglang', SGLANG_PARAMETERS)
      expect(refusal(sglang, {mem_fraction_static: -0.1})).to.include({param: 'mem_fraction_static', status: 400})
      expect(refusal(sglang, {gpu_memory_utilization: 0.9}).message).to.match(/^unknown parameter "gpu_memory_utilization" for engine sglang; it accepts: .*mem_fraction_static/)
    })

    it('needs Linux with an NVIDIA GPU, and says so on a machine without one', () => {
      expect(sglangAvailability('linux', true)).to.equal(true)
      expect(sglangAvailability('linux', false)).to.equal(
        'SGLang needs Linux with an NVIDIA GPU: its PyPI package is built for CUDA, and this Linux machine has no NVIDIA GPU (no driver at /proc/driver/nvidia); use vllm (its CPU build runs here on Linux), llama.cpp (GGUF, any machine) or transformers instead.',
      )
      expect(sglangAvailability('darwin', false)).to.match(/and this machine is darwin;/)
    })
  })

  it('asks vLLM and SGLang to report the prompt tokens their prefix caches served, when the launch says so', () => {
    expect(engineParameters(engine('vllm', VLLM_PARAMETERS), {enable_prompt_tokens_details: 'true', model_name: 'qwen2.5-instruct'} as never)).to.deep.equal({enable_prompt_tokens_details: true})
    expect(vllmCommand(load({enable_prompt_tokens_details: true}), vllmLaunch, commandLineFlags).args.at(-1)).to.equal('--enable-prompt-tokens-details')
    expect(sglangCommand(load({enable_cache_report: true}), launch, commandLineFlags).args.at(-1)).to.equal('--enable-cache-report')
  })

  describe('MLX', () => {
    it('runs `mlx_lm.server` with the model\'s folder on the kernel\'s port', () => {
      const command = mlxCommand(load({max_tokens: 512, trust_remote_code: false}), launch, commandLineFlags)
      expect(command.args).to.deep.equal(['-m', 'mlx_lm.server', '--model', '/cache/qwen2.5-instruct--0_5B--pytorch--none', '--host', '127.0.0.1', '--port', '41234', '--max-tokens', '512'])
      expect(refusal(engine('MLX', MLX_PARAMETERS), {top_p: 2})).to.include({param: 'top_p', status: 400})
    })

    it('runs on Apple silicon Macs only, and says why and what to use elsewhere', () => {
      expect(mlxAvailability('darwin', 'arm64')).to.equal(true)
      expect(mlxAvailability('darwin', 'x64')).to.match(/^MLX runs only on Apple silicon Macs \(macOS on arm64\), and this machine is darwin on x64;/)
      expect(mlxAvailability('linux', 'x64')).to.equal(
        'MLX runs only on Apple silicon Macs (macOS on arm64), and this machine is linux on x64; use vllm or sglang (Linux with a GPU), llama.cpp (GGUF, any machine) or transformers instead.',
      )
    })
  })
})
