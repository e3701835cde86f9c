/**
 * What `servicectl lsit` answers. On a terminal, @oclif/plugin-not-found asks "Did you mean list?" and runs it when
 * confirmed; anywhere else (a script, a pipe, CI) that plugin says only that the command is unknown, so this hook,
 * which replaces the plugin's (package.json lists this hook, not the plugin, as oclif runs every plugin's hook at
 * once), prints the suggestion instead of asking for it.
 */
import {type Hook, toConfiguredId} from '@oclif/core'
import askDidYouMean from '@oclif/plugin-not-found'

/** Edits (insertions, deletions, substitutions) that turn `a` into `b`. */
function editDistance(a: string, b: string): number {
  let previous = Array.from({length: b.length + 1}, (_, index) => index)
  for (const [i, charA] of [...a].entries()) {
    const current = [i + 1]
    for (const [j, charB] of [...b].entries()) current.push(Math.min(previous[j + 1] + 1, current[j] + 1, previous[j] + (charA === charB ? 0 : 1)))
    previous = current
  }

  return previous[b.length]
}

const hook: Hook.CommandNotFound = async function (options) {
  if (process.stdin.isTTY) return askDidYouMean.call(this, options)
  const {config, id} = options
  const hidden = new Set(config.commands.filter((command) => command.hidden).map((command) => command.id))
  const visible = [...config.commandIDs, ...config.commands.flatMap((command) => command.aliases)].filter((candidate) => !hidden.has(candidate))
  const [closest] = visible.toSorted((x, y) => editDistance(id, x) - editDistance(id, y))
  this.warn(`${toConfiguredId(id, config)} is not a ${config.bin} command.`)
  const suggestion = closest ? `Did you mean ${toConfiguredId(closest, config)}? ` : ''
  this.error(`${suggestion}Run ${config.bin} help for a list of available commands.`, {exit: 127})
}

export default hook
