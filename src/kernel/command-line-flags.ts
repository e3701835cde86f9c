/**
 * Engine parameters as the command-line flags of a Python server (`vllm serve`, SGLang's `launch_server`,
 * `mlx_lm.server`): those programs name their options after the same settings with dashes, so an engine declares
 * the parameters it passes through and this writes them, `max_model_len: 4096` as `--max-model-len 4096`.
 */

export interface CommandLineFlagsOptions {
  /**
   * Whether the program takes `--no-<flag>` for a false boolean (argparse's BooleanOptionalAction, as vLLM's options
   * do). Without it a false boolean is left out, the default of a `store_true` flag (SGLang's).
   */
  negatableBooleans?: boolean
  /**
   * The parameter that splits a model across GPUs (vLLM's `tensor_parallel_size`, SGLang's `tp_size`) and the GPUs the
   * launch was given (`LoadRequest.devices`): given more than one and not the parameter, the model is split across
   * them all, the parameter's flag written last. `alongside` names the parameters that share the GPUs out too
   * (vLLM's `pipeline_parallel_size`, SGLang's `dp_size`): the split takes the GPUs they leave, and none is written
   * when they do not divide the GPUs evenly (the program then says what it needs).
   */
  splitAcross?: {parameter: string; devices?: number[]; alongside?: string[]}
}

/** The default split across `devices` GPUs, with what the parameters alongside it already take. */
function defaultSplit(parameters: Record<string, unknown>, {alongside = [], devices = [], parameter}: NonNullable<CommandLineFlagsOptions['splitAcross']>) {
  if (devices.length <= 1 || parameters[parameter] !== undefined) return {}
  const taken = alongside.reduce((product, name) => product * (typeof parameters[name] === 'number' && parameters[name] > 0 ? parameters[name] : 1), 1)
  const split = devices.length / taken
  return Number.isInteger(split) && split >= 1 ? {[parameter]: split} : {}
}

/**
 * `--name value` for each parameter (underscores become dashes), in the order given; booleans are bare flags. The
 * type of `api.external.commandLineFlags`, which an engine's command builder takes.
 */
export function commandLineFlags(parameters: Record<string, unknown>, {negatableBooleans = false, splitAcross}: CommandLineFlagsOptions = {}): string[] {
  const flags: string[] = []
  const split = splitAcross ? defaultSplit(parameters, splitAcross) : {}
  for (const [name, value] of Object.entries({...parameters, ...split})) {
    if (value === undefined || value === null) continue
    const flag = name.replaceAll('_', '-')
    if (value === true) flags.push(`--${flag}`)
    else if (value === false) {
      if (negatableBooleans) flags.push(`--no-${flag}`)
    } else flags.push(`--${flag}`, String(value))
  }

  return flags
}

export type CommandLineFlags = typeof commandLineFlags
