/**
 * How a model becomes a `vllm serve` program: the launch's engine parameters are vLLM's own options, passed through
 * as flags, except the CPU backend's settings, which vLLM reads from its environment.
 */
import type {CommandLineFlags, EngineParameter, ExternalCommand, LoadRequest, ToolCallFormat} from 'service-toolkit'

import {delimiter} from 'node:path'

const DTYPES = ['auto', 'half', 'float16', 'bfloat16', 'float', 'float32']

/**
 * `vllm serve`'s options that a launch may set (`--gpu_memory_utilization 0.9`), as vLLM names them. Not
 * `quantization`: a launch's `quantization` picks the spec (AWQ's `Int4`), and vLLM reads the method from the model's
 * config.
 */
export const VLLM_PARAMETERS: Record<string, EngineParameter> = {
  chat_template: {description: 'Path of a Jinja chat template to use instead of the model\'s own, or the template itself.', reaches: 'template-or-file', type: 'string'},
  cpu_kvcache_space: {description: 'CPU backend only: GiB of memory for the KV cache (VLLM_CPU_KVCACHE_SPACE; vLLM\'s default is 4).', minimum: 1, type: 'integer'},
  dtype: {description: 'Data type of the weights and activations (default auto: the model\'s, bfloat16 on CPU).', enum: DTYPES, type: 'string'},
  enable_auto_tool_choice: {description: 'Let the model call tools when it decides to (on by default when the model\'s tool-call format is known); the model then has the tools ability.', type: 'boolean'},
  enable_prefix_caching: {description: 'Reuse the KV cache of shared prompt prefixes (vLLM\'s default: on).', type: 'boolean'},
  enable_prompt_tokens_details: {description: 'Report the prompt tokens the prefix cache served as usage.prompt_tokens_details.cached_tokens.', type: 'boolean'},
  enforce_eager: {description: 'Run in eager mode, without CUDA graphs or compilation: starts faster, generates slower.', type: 'boolean'},
  gpu_memory_utilization: {description: 'Fraction of each GPU\'s memory vLLM may take, from 0 to 1 (vLLM\'s default 0.9).', maximum: 1, minimum: 0, type: 'number'},
  kv_cache_dtype: {description: 'Data type of the KV cache.', enum: ['auto', 'fp8', 'fp8_e4m3', 'fp8_e5m2'], type: 'string'},
  max_model_len: {description: 'Context length in tokens (default: the model\'s).', minimum: 16, type: 'integer'},
  max_num_batched_tokens: {description: 'Tokens processed in one engine step.', minimum: 1, type: 'integer'},
  max_num_seqs: {description: 'Requests served at once.', minimum: 1, type: 'integer'},
  pipeline_parallel_size: {description: 'Pipeline stages, one per GPU group.', minimum: 1, type: 'integer'},
  reasoning_parser: {description: 'Parser that separates the model\'s reasoning from its answer (e.g. deepseek_r1, qwen3).', type: 'string'},
  seed: {description: 'Random seed of the engine.', type: 'integer'},
  swap_space: {description: 'GiB of CPU memory per GPU for swapped-out KV cache.', minimum: 0, type: 'number'},
  tensor_parallel_size: {description: 'GPUs the model is split across (default: the GPUs the launch was given, n_gpu or gpu_idx).', minimum: 1, type: 'integer'},
  tool_call_parser: {description: 'Parser of the model\'s tool calls (default: the one of its format, hermes for Qwen, llama3_json for Llama 3, mistral for Mistral).', type: 'string'},
  trust_remote_code: {description: 'Run the Python code a model repository ships (needed by some architectures).', reaches: 'repository-code', type: 'boolean'},
}

/**
 * vLLM's reasoning parser for a reasoning family (its `reasoning` ability), so that vLLM answers the reasoning apart:
 * Qwen3's, gpt-oss's, and DeepSeek-R1's for the other `<think>` models (QwQ, the R1 distills), whose prompt may
 * already open the block. A launch's `reasoning_parser` wins.
 */
export function vllmReasoningParser(family: {model_name?: string; model_ability?: string[]; reasoning_start_tag?: unknown} | undefined): string | undefined {
  if (!family?.model_ability?.includes('reasoning')) return undefined
  if (/gpt-oss/i.test(family.model_name ?? '')) return 'openai_gptoss'
  if (/^qwen3/i.test(family.model_name ?? '')) return 'qwen3'
  return (family.reasoning_start_tag ?? '<think>') === '<think>' ? 'deepseek_r1' : undefined
}

/** vLLM's tool-call parser of each format the service knows (`--tool-call-parser`). */
const VLLM_TOOL_PARSERS: Record<ToolCallFormat, string> = {hermes: 'hermes', llama3_json: 'llama3_json', mistral: 'mistral'}

/**
 * The flags that let vLLM parse the model's tool calls itself, for the format of its family or chat template: its
 * parser, and auto tool choice, without which vLLM refuses `tool_choice: auto`. A launch's own settings win; a launch
 * that names a parser is given auto tool choice too, unless it turns it off.
 */
export function vllmToolCalls(format: ToolCallFormat | undefined, parameters: Record<string, unknown>): Record<string, unknown> {
  const parser = typeof parameters.tool_call_parser === 'string' ? parameters.tool_call_parser : format && VLLM_TOOL_PARSERS[format]
  if (!parser || parameters.enable_auto_tool_choice === false) return {}
  return {enable_auto_tool_choice: true, tool_call_parser: parser}
}

/** The one host vLLM may fetch pictures from: RFC 6761's reserved name, which no DNS answers. */
export const NO_MEDIA_HOST = 'invalid'

/** Parameters vLLM's CPU backend reads from its environment, by the variable that carries each. */
const ENVIRONMENT_PARAMETERS: Record<string, string> = {cpu_kvcache_space: 'VLLM_CPU_KVCACHE_SPACE'}

export interface ServerLaunch {
  /** The Python interpreter that has vLLM installed. */
  python: string
  port: number
  /** The plugin's folder of Python start-up code (its `sitecustomize.py`), put first on the program's PYTHONPATH. */
  startupDir: string
  /** PYTHONPATH as the service has it, kept after the plugin's folder. */
  pythonPath?: string
}

/**
 * `python -m vllm.entrypoints.openai.api_server` rather than `vllm serve`: the same server, and the one entry point
 * that works in every vLLM package, as the CLI of the CPU build (`vllm-cpu` 0.32) asks for the version of a package
 * named `vllm` at start and fails. The model is served under its uid, which requests name; a launch given several
 * GPUs splits the model across them unless it says otherwise.
 */
export function vllmCommand(
  request: Pick<LoadRequest, 'devices' | 'modelPath' | 'modelUid' | 'parameters'> & {family?: LoadRequest['family']; toolCallFormat?: ToolCallFormat},
  {port, python, pythonPath, startupDir}: ServerLaunch,
  flags: CommandLineFlags,
): ExternalCommand {
  const reasoningParser = vllmReasoningParser(request.family)
  const passed: Record<string, unknown> = {...(reasoningParser ? {reasoning_parser: reasoningParser} : {}), ...vllmToolCalls(request.toolCallFormat, request.parameters)}
  const env: Record<string, string> = {
    // The weights are local, so the program never needs the hub; vLLM's usage statistics stay on this machine.
    HF_HUB_OFFLINE: '1',
    PYTHONPATH: pythonPath ? `${startupDir}${delimiter}${pythonPath}` : startupDir,
    VLLM_NO_USAGE_STATS: '1',
  }
  for (const [name, value] of Object.entries(request.parameters)) {
    if (ENVIRONMENT_PARAMETERS[name]) env[ENVIRONMENT_PARAMETERS[name]] = String(value)
    else passed[name] = value
  }

  return {
    args: [
      ...['-m', 'vllm.entrypoints.openai.api_server', '--model', request.modelPath, '--host', '127.0.0.1', '--port', String(port), '--served-model-name', request.modelUid],
      // The service gives vLLM pictures as data URLs of the bytes it checked; vLLM fetches a URL only from the listed
      // hosts, and `invalid` (a name reserved never to resolve) is the only one, so it fetches nothing itself.
      ...['--allowed-media-domains', NO_MEDIA_HOST],
      ...flags(passed, {negatableBooleans: true, splitAcross: {alongside: ['pipeline_parallel_size'], devices: request.devices, parameter: 'tensor_parallel_size'}}),
    ],
    env,
    file: python,
  }
}
