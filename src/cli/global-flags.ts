/**
 * The global options (`servicectl -p 9997 list`, `servicectl --log-level debug list`) may come before the
 * subcommand, as in Xinference's CLI. oclif only parses flags after the command id, so the launcher moves the
 * leading ones behind the command's own arguments before oclif sees them. Only options that take a value are
 * listed: `-v`/`--version` and `-h`/`--help` in front keep their meaning.
 */
const GLOBAL_FLAGS_WITH_VALUE = new Set(['--api-key', '-ak', '--endpoint', '-e', '--host', '-H', '--log-level', '--port', '-p', '--tls-ca'])

/** Whether a token is a global option with its value in the same token: `--port=9997`, `-p9997`. */
function joinedGlobalFlag(token: string): boolean {
  const long = token.match(/^(--[a-z-]+)=/)
  if (long) return GLOBAL_FLAGS_WITH_VALUE.has(long[1])
  return /^-[eHp]./.test(token) && !GLOBAL_FLAGS_WITH_VALUE.has(token)
}

/** `argv` with the global options before the subcommand moved after its arguments (before a `--`, if any). */
export function moveLeadingGlobalFlags(argv: string[]): string[] {
  const leading: string[] = []
  let index = 0
  while (index < argv.length) {
    const token = argv[index]
    if (GLOBAL_FLAGS_WITH_VALUE.has(token) && index + 1 < argv.length) {
      leading.push(token, argv[index + 1])
      index += 2
    } else if (joinedGlobalFlag(token)) {
      leading.push(token)
      index += 1
    } else break
  }

  const command = argv.slice(index)
  if (leading.length === 0 || command.length === 0) return argv
  const endOfFlags = command.indexOf('--')
  return endOfFlags === -1 ? [...command, ...leading] : [...command.slice(0, endOfFlags), ...leading, ...command.slice(endOfFlags)]
}
