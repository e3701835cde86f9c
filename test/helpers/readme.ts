import {readdir, readFile} from 'node:fs/promises'
import {join} from 'node:path'

import {ROOT} from './service.js'

/** The README and every documentation page under docs/ (path relative to the repository, text). */
export async function documentationPages(): Promise<Array<{path: string; text: string}>> {
  const pages = ['README.md', ...(await readdir(join(ROOT, 'docs'))).filter((file) => file.endsWith('.md')).sort().map((file) => `docs/${file}`)]
  return Promise.all(pages.map(async (path) => ({path, text: await readFile(join(ROOT, path), 'utf8')})))
}

/** The one documentation page that holds `marker` (a block or table may move between pages without its tests changing). */
async function pageWith(marker: string): Promise<{path: string; text: string}> {
  const pages = (await documentationPages()).filter((page) => page.text.includes(marker))
  if (pages.length !== 1) throw new Error(`"${marker}" is in ${pages.length} documentation pages (${pages.map((page) => page.path).join(', ')}), not one`)
  return pages[0]
}

/** The code block that follows `<!-- tested: marker -->` in the README or a page under docs/, as the tests run it. */
export async function readmeBlock(marker: string): Promise<string> {
  const {path, text} = await pageWith(`<!-- tested: ${marker} -->`)
  const match = new RegExp(`<!-- tested: ${marker} -->\\n\`\`\`\\w+\\n([\\s\\S]*?)\\n\`\`\``).exec(text)
  if (!match) throw new Error(`${path} has no code block right after "tested: ${marker}"`)
  return match[1]
}
