/**
 * How a model becomes an SGLang server (`python -m sglang.launch_server`): the launch's engine parameters are
 * SGLang's own options, passed through as flags.
 */
import type {CommandLineFlags, EngineParameter, ExternalCommand, LoadRequest, ToolCallFormat} from 'service-toolkit'

/**
 * `launch_server`'s options that a launch may set (`--mem_fraction_static 0.8`), as SGLang names them. Not
 * `quantization`: a launch's `quantization` picks the spec, and SGLang reads the method from the model's config.
 */
export const SGLANG_PARAMETERS: Record<string, EngineParameter> = {
  attention_backend: {description: 'Attention kernels (e.g. flashinfer, triton, torch_native).', type: 'string'},
  chat_template: {description: 'Path of a chat template to use instead of the model\'s own (or a built-in template\'s name, which SGLang takes for a path when a file of that name exists).', reaches: 'file', type: 'string'},
  chunked_prefill_size: {description: 'Tokens of a long prompt prefilled per step.', minimum: 1, type: 'integer'},
  context_length: {description: 'Context length in tokens (default: the model\'s).', minimum: 16, type: 'integer'},
  device: {description: 'Device type to run on (default: cuda where there is a GPU).', enum: ['cuda', 'cpu', 'xpu', 'hpu', 'npu'], type: 'string'},
  disable_cuda_graph: {description: 'Do not capture CUDA graphs: starts faster, generates slower.', type: 'boolean'},
  disable_radix_cache: {description: 'Do not reuse the KV cache of shared prompt prefixes.', type: 'boolean'},
  dp_size: {description: 'Data-parallel replicas inside the server.', minimum: 1, type: 'integer'},
  dtype: {description: 'Data type of the weights and activations (default auto).', enum: ['auto', 'half', 'float16', 'bfloat16', 'float', 'float32'], type: 'string'},
  enable_cache_report: {description: 'Report the prompt tokens the radix cache served as usage.prompt_tokens_details.cached_tokens.', type: 'boolean'},
  kv_cache_dtype: {description: 'Data type of the KV cache.', enum: ['auto', 'fp8_e4m3', 'fp8_e5m2'], type: 'string'},
  max_running_requests: {description: 'Requests served at once.', minimum: 1, type: 'integer'},
  mem_fraction_static: {description: 'Fraction of GPU memory for the weights and KV cache, from 0 to 1.', maximum: 1, minimum: 0, type: 'number'},
  random_seed: {description: 'Random seed of the server.', type: 'integer'},
  reasoning_parser: {description: 'Parser that separates the model\'s reasoning from its answer (e.g. deepseek-r1, qwen3).', type: 'string'},
  tool_call_parser: {description: 'Parser of the model\'s tool calls (default: the one of its format, qwen25 for Qwen, llama3 for Llama 3, mistral for Mistral); the model then has the tools ability.', type: 'string'},
  tp_size: {description: 'GPUs the model is split across (default: the GPUs the launch was given, n_gpu or gpu_idx).', minimum: 1, type: 'integer'},
  trust_remote_code: {description: 'Run the Python code a model repository ships (needed by some architectures).', reaches: 'repository-code', type: 'boolean'},
}

export interface ServerLaunch {
  /** The Python interpreter that has SGLang installed. */
  python: string
  port: number
}

/**
 * SGLang's reasoning parser for a reasoning family (its `reasoning` ability), so that SGLang answers the reasoning
 * apart: Qwen3's, gpt-oss's, and DeepSeek-R1's for the other `<think>` models. A launch's `reasoning_parser` wins.
 */
export function sglangReasoningParser(family: {model_name?: string; model_ability?: string[]; reasoning_start_tag?: unknown} | undefined): string | undefined {
  if (!family?.model_ability?.includes('reasoning')) return undefined
  if (/gpt-oss/i.test(family.model_name ?? '')) return 'gpt-oss'
  if (/^qwen3/i.test(family.model_name ?? '')) return 'qwen3'
  return (family.reasoning_start_tag ?? '<think>') === '<think>' ? 'deepseek-r1' : undefined
}

/** SGLang's tool-call parser of each format the service knows (`--tool-call-parser`). */
const SGLANG_TOOL_PARSERS: Record<ToolCallFormat, string> = {hermes: 'qwen25', llama3_json: 'llama3', mistral: 'mistral'}

/** SGLang's parser for the model's tool-call format, so that it answers calls as `tool_calls`; a launch's own wins. */
export function sglangToolCallParser(format: ToolCallFormat | undefined, parameters: Record<string, unknown>): string | undefined {
  if (typeof parameters.tool_call_parser === 'string') return parameters.tool_call_parser
  return format && SGLANG_TOOL_PARSERS[format]
}

/**
 * The model is served under its uid, which requests name. SGLang's flags are `store_true`, so a false boolean is
 * simply left out; a launch given several GPUs splits the model across them unless it says otherwise.
 */
export function sglangCommand(
  request: Pick<LoadRequest, 'devices' | 'modelPath' | 'modelUid' | 'parameters'> & {family?: LoadRequest['family']; toolCallFormat?: ToolCallFormat},
  {port, python}: ServerLaunch,
  flags: CommandLineFlags,
): ExternalCommand {
  const reasoningParser = sglangReasoningParser(request.family)
  const toolCallParser = sglangToolCallParser(request.toolCallFormat, request.parameters)
  const parameters = {...(reasoningParser ? {reasoning_parser: reasoningParser} : {}), ...(toolCallParser ? {tool_call_parser: toolCallParser} : {}), ...request.parameters}
  return {
    args: ['-m', 'sglang.launch_server', '--model-path', request.modelPath, '--host', '127.0.0.1', '--port', String(port), '--served-model-name', request.modelUid, ...flags(parameters, {splitAcross: {alongside: ['dp_size'], devices: request.devices, parameter: 'tp_size'}})],
    // The weights are local, so the program never needs the hub.
    env: {HF_HUB_OFFLINE: '1'},
    file: python,
  }
}
