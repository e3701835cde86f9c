import {readFile} from 'node:fs/promises'
import {join} from 'node:path'

import {ROOT} from './service.js'

/** The code block of a Markdown page (README.md unless named) that follows `<!-- tested: marker -->`, as the tests run it. */
export async function readmeBlock(marker: string, page = 'README.md'): Promise<string> {
  const text = await readFile(join(ROOT, page), 'utf8')
  const match = new RegExp(`<!-- tested: ${marker} -->\\n\`\`\`\\w+\\n([\\s\\S]*?)\\n\`\`\``).exec(text)
  if (!match) throw new Error(`${page} has no block marked "tested: ${marker}"`)
  return match[1]
}
