#!/usr/bin/env node
// `npm start` runs this before the service: it builds (npm run build) only when a file the build reads is newer than
// the last build it finished, so a start after no change takes no build at all (a full build is 15 to 30 s on 2 cores).
import {execFileSync} from 'node:child_process'
import {existsSync, readdirSync, statSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))
/** Written when a build succeeds; it is inside dist/, so a clean (or a fresh clone) builds again. */
export const STAMP = join(root, 'dist', '.build-finished')
const SOURCES = ['src', 'web', 'packages/client/src', 'packages/client/package.json', 'package.json', 'package-lock.json', 'tsconfig.base.json', 'tsconfig.build.json', 'tsconfig.json']
const SKIPPED = new Set(['node_modules', 'dist'])

/** The newest modification time under the paths the build reads (plugins' sources and manifests included). */
export function newestSource(base = root) {
  let newest = 0
  const visit = (path) => {
    const stat = statSync(path, {throwIfNoEntry: false})
    if (!stat) return
    if (!stat.isDirectory()) {
      newest = Math.max(newest, stat.mtimeMs)
      return
    }

    for (const entry of readdirSync(path)) if (!SKIPPED.has(entry) && !entry.endsWith('.tsbuildinfo')) visit(join(path, entry))
  }

  for (const source of SOURCES) visit(join(base, source))
  const plugins = join(base, 'plugins')
  for (const plugin of existsSync(plugins) ? readdirSync(plugins) : []) for (const part of ['src', 'package.json', 'tsconfig.json']) visit(join(plugins, plugin, part))
  return newest
}

export function buildIsCurrent(base = root, stamp = STAMP) {
  const built = statSync(stamp, {throwIfNoEntry: false})
  return built !== undefined && built.mtimeMs >= newestSource(base)
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  // `npm run build` ends with `--stamp`, so any finished build counts, whoever ran it.
  if (process.argv.includes('--stamp')) writeFileSync(STAMP, `${new Date().toISOString()}\n`)
  else if (buildIsCurrent()) console.error('The build is current: nothing changed since the last one (npm run build builds anyway).')
  else execFileSync('npm', ['run', 'build'], {cwd: root, stdio: 'inherit'})
}
