import {TWO_LETTER_FLAGS} from './two-letter-flags.js'

/**
 * Engine parameters arrive on the command line as `--name value` (or `--name=value`) pairs the command does
 * not declare. They are collected as strings; the service converts each to the type the engine declares
 * and names any it does not know. One followed by another flag, the command's own (`--flash_attn -q f32`) or an
 * engine parameter, is a bare switch: `true`.
 */
export function splitEngineOptions(
  argv: string[],
  ...declared: Array<Record<string, {char?: string; aliases?: string[]; type?: string}>>
): {engineOptions: Record<string, string>; rest: string[]} {
  const known = new Map<string, boolean>([['--help', false], ['-h', false], ['--json', false]])
  for (const flags of declared) {
    for (const [name, flag] of Object.entries(flags)) {
      const takesValue = flag.type !== 'boolean'
      known.set(`--${name}`, takesValue)
      if (flag.type === 'boolean') known.set(`--no-${name}`, false)
      for (const alias of flag.aliases ?? []) known.set(`--${alias}`, takesValue)
      if (flag.char) known.set(`-${flag.char}`, takesValue)
    }
  }

  // The command's own flags as they may be typed: `-q`, `-qf32`, `-q=f32`, `--quantization=f32`, and `-en`, which
  // oclif's preparse hook rewrites only after the engine parameters are taken out.
  const isOwnFlag = (token: string) => {
    const [flag] = token.split('=', 1)
    return known.has(flag) || Object.hasOwn(TWO_LETTER_FLAGS, flag) || (/^-[^-]/.test(token) && known.has(token.slice(0, 2)))
  }

  const engineOptions: Record<string, string> = {}
  const rest: string[] = []
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]
    const [flag, inline] = arg.split(/=(.*)/s, 2)
    if (known.has(flag) || !flag.startsWith('--') || flag.length < 3) {
      rest.push(arg)
      if (known.get(flag) && inline === undefined && i + 1 < argv.length) rest.push(argv[++i])
      continue
    }

    const name = flag.slice(2)
    if (inline !== undefined) engineOptions[name] = inline
    else if (i + 1 < argv.length && !argv[i + 1].startsWith('--') && !isOwnFlag(argv[i + 1])) engineOptions[name] = argv[++i]
    else engineOptions[name] = 'true'
  }

  return {engineOptions, rest}
}
