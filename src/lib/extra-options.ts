/**
 * Engine parameters arrive on the command line as `--name value` (or `--name=value`) pairs the command does
 * not declare. They are collected as strings; the service converts each to the type the engine declares
 * and names any it does not know.
 */
export function engineOptionsFrom(argv: string[], ...declared: Array<Record<string, {char?: string}>>): Record<string, string> {
  const known = new Set<string>()
  for (const flags of declared) {
    for (const [name, flag] of Object.entries(flags)) {
      known.add(`--${name}`)
      if (flag.char) known.add(`-${flag.char}`)
    }
  }

  known.add('--json')
  const out: Record<string, string> = {}
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]
    const [flag, inline] = arg.split(/=(.*)/s, 2)
    if (known.has(flag)) {
      if (inline === undefined && flag !== '--json') i++
      continue
    }

    if (!flag.startsWith('--') || flag.length < 3) continue
    const name = flag.slice(2)
    if (inline !== undefined) out[name] = inline
    else if (i + 1 < argv.length && !argv[i + 1].startsWith('--')) out[name] = argv[++i]
    else out[name] = 'true'
  }

  return out
}
