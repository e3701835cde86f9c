/**
 * How a model becomes an `mlx_lm.server` program, and where one can run: MLX computes on Apple silicon's GPU through
 * Metal, so the engine is offered on macOS on arm64 only.
 */
import type {CommandLineFlags, EngineParameter, ExternalCommand, LoadRequest} from 'service-toolkit'

/** `mlx_lm.server`'s options that a launch may set (`--max_tokens 1024`), as mlx-lm names them. */
export const MLX_PARAMETERS: Record<string, EngineParameter> = {
  chat_template: {description: 'A chat template to use instead of the model\'s own.', type: 'string'},
  draft_model: {description: 'Path of a smaller MLX model for speculative decoding (or its hub repository, which mlx-lm takes for a path when a folder of that name exists).', reaches: 'folder', type: 'string'},
  max_tokens: {description: 'Tokens a reply may have when the request gives no max_tokens.', minimum: 1, type: 'integer'},
  num_draft_tokens: {description: 'Tokens the draft model proposes per step.', minimum: 1, type: 'integer'},
  temp: {description: 'Sampling temperature when the request gives none.', minimum: 0, type: 'number'},
  top_p: {description: 'Nucleus sampling when the request gives none.', maximum: 1, minimum: 0, type: 'number'},
  trust_remote_code: {description: 'Run the Python code a model repository ships for its tokenizer.', reaches: 'repository-code', type: 'boolean'},
  use_default_chat_template: {description: 'Use the tokenizer\'s default chat template.', type: 'boolean'},
}

/**
 * The model `mlx_lm.server` serves when a request names `default_model`: the one given with `--model`. Any other name
 * is a repository it would try to download.
 */
export const MLX_SERVED_MODEL = 'default_model'

export interface ServerLaunch {
  /** The Python interpreter that has mlx-lm installed. */
  python: string
  port: number
}

export function mlxCommand(request: Pick<LoadRequest, 'modelPath' | 'parameters'>, {port, python}: ServerLaunch, flags: CommandLineFlags): ExternalCommand {
  return {
    args: ['-m', 'mlx_lm.server', '--model', request.modelPath, '--host', '127.0.0.1', '--port', String(port), ...flags(request.parameters)],
    // The weights are local, so the program never needs the hub.
    env: {HF_HUB_OFFLINE: '1'},
    file: python,
  }
}

/** MLX needs Apple silicon: anywhere else the engine says so, and what to use instead. */
export function mlxAvailability(platform: string = process.platform, arch: string = process.arch): true | string {
  if (platform === 'darwin' && arch === 'arm64') return true
  return `MLX runs only on Apple silicon Macs (macOS on arm64), and this machine is ${platform} on ${arch}; use vllm or sglang (Linux with a GPU), llama.cpp (GGUF, any machine) or transformers instead.`
}
