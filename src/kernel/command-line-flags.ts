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
}

/** `--name value` for each parameter (underscores become dashes), in the order given; booleans are bare flags. */
export function commandLineFlags(parameters: Record<string, unknown>, {negatableBooleans = false}: CommandLineFlagsOptions = {}): string[] {
  const flags: string[] = []
  for (const [name, value] of Object.entries(parameters)) {
    if (value === undefined || value === null) continue
    const flag = name.replaceAll('_', '-')
    if (value === true) flags.push(`--${flag}`)
    else if (value === false) {
      if (negatableBooleans) flags.push(`--no-${flag}`)
    } else flags.push(`--${flag}`, String(value))
  }

  return flags
}
