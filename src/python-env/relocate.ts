/**
 * Points a finished environment's scripts at the folder it is about to be renamed to. pip and uv write the
 * environment's own path into what they install (the `#!` line of every console script, the activate scripts,
 * pyvenv.cfg): an environment built in a temporary folder works from its final one only once those say so.
 */
import {lstat, readdir, readFile, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

/** Scripts are small; a large file in bin/ is a binary that names no path worth rewriting. */
const LARGEST_SCRIPT = 1024 * 1024

export async function pointScriptsAt(builtIn: string, finalDir: string): Promise<void> {
  const bin = join(builtIn, 'bin')
  const files = [join(builtIn, 'pyvenv.cfg'), ...(await readdir(bin).catch(() => [])).map((name) => join(bin, name))]
  for (const file of files) {
    const stats = await lstat(file).catch(() => undefined)
    if (!stats?.isFile() || stats.size > LARGEST_SCRIPT) continue
    const content = await readFile(file)
    if (!content.includes(builtIn)) continue
    await writeFile(file, content.toString('latin1').replaceAll(builtIn, finalDir), {encoding: 'latin1', mode: stats.mode})
  }
}
