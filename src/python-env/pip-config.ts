/**
 * This machine's pip configuration, for uv: pip reads its config files and PIP_* variables by itself, uv reads
 * neither, so an environment that inherits the pip configuration gets it from `pip config list` as uv options.
 */
import type {ProbeProgram} from './toolchain.js'

/** The settings of pip's configuration that decide where packages come from and which versions are allowed. */
export interface PipSources {
  indexUrl?: string
  extraIndexUrls: string[]
  findLinks: string[]
  trustedHosts: string[]
  constraints: string[]
}

/** pip's own precedence: a PIP_* variable over the `install` section over `global`. */
const SECTION_RANK: Record<string, number> = {':env:': 3, global: 1, install: 2}

/** The sources in `pip config list`'s output (`global.find-links='/opt/wheels'`, `:env:.index-url='…'`). */
export function parsePipConfigList(text: string): PipSources {
  const best = new Map<string, {rank: number; value: string}>()
  for (const line of text.split('\n')) {
    const match = /^(:env:|[\w-]+)\.([\w-]+)='(.*)'$/.exec(line.trim())
    if (!match) continue
    const [, section, key, value] = match
    const rank = SECTION_RANK[section] ?? 0
    if (rank > (best.get(key)?.rank ?? -1)) best.set(key, {rank, value})
  }

  const list = (key: string) => best.get(key)?.value.split(/\s+/).filter(Boolean) ?? []
  return {
    constraints: list('constraint'),
    extraIndexUrls: list('extra-index-url'),
    findLinks: list('find-links'),
    indexUrl: list('index-url')[0],
    trustedHosts: list('trusted-host'),
  }
}

/** The machine's pip sources as the interpreter's pip sees them; none when it has no pip. */
export async function readPipSources(python: string, probe: ProbeProgram): Promise<PipSources> {
  const listed = await probe(python, ['-m', 'pip', 'config', 'list']).catch(() => undefined)
  return parsePipConfigList(listed?.exitCode === 0 ? listed.stdout : '')
}
