/**
 * The arguments of oclif's plugin-plugins commands, made to do what a person means by them:
 *
 * - `plugins install` (`add`) of a package on disk: plugin-plugins takes an argument with a '/' for a GitHub repository
 *   (`./x.tgz` became https://github.com/./x.tgz) and one without for an npm name, so a path (`./x.tgz`, `../plugin`,
 *   `/abs/x.tgz`, `x.tgz`) or a relative `file:` one is given to it as `file:<absolute path>`, which it hands to npm
 *   as it is, to install from that file or folder.
 * - `plugins link` of a folder with no lockfile: plugin-plugins installs a linked plugin's dependencies only with a
 *   lockfile, and without one warns "No lockfile found" on every link, although a plugin made by `servicectl scaffold`
 *   has none to install; the link is made with --no-install then, which skips only that warning.
 */
import {existsSync} from 'node:fs'
import {isAbsolute, join, resolve} from 'node:path'

const INSTALL_COMMANDS = new Set(['plugins:add', 'plugins:install'])
/** The lockfiles plugin-plugins installs a linked plugin's dependencies with (plugins.js, `link`). */
const LOCKFILES = ['package-lock.json', 'pnpm-lock.yaml', 'yarn.lock']

const looksLikePath = (argument: string) => /^\.\.?(?:[/\\]|$)/.test(argument) || isAbsolute(argument) || /\.(?:tgz|tar\.gz)$/.test(argument)

function installSource(argument: string): string {
  if (argument.startsWith('-')) return argument
  if (argument.startsWith('file:')) return `file:${resolve(argument.slice('file:'.length))}`
  return looksLikePath(argument) ? `file:${resolve(argument)}` : argument
}

function linkArguments(argv: string[]): string[] {
  if (argv.some((argument) => /^--(?:no-)?install$/.test(argument))) return argv
  const [folder] = argv.filter((argument) => !argument.startsWith('-'))
  const hasLockfile = folder !== undefined && LOCKFILES.some((name) => existsSync(join(resolve(folder), name)))
  return hasLockfile || folder === undefined ? argv : [...argv, '--no-install']
}

/** `argv` of the command `commandId` as plugin-plugins should read it; any other command's as it is. */
export function pluginCommandArguments(commandId: string | undefined, argv: string[]): string[] {
  if (commandId && INSTALL_COMMANDS.has(commandId)) return argv.map((argument) => installSource(argument))
  return commandId === 'plugins:link' ? linkArguments(argv) : argv
}
