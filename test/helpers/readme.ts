import {readFile} from 'node:fs/promises'
import {join} from 'node:path'

import {ROOT} from './service.js'

/** The code block of README.md that follows `<!-- tested: marker -->`, as the tests run it. */
export async function readmeBlock(marker: string): Promise<string> {
  const readme = await readFile(join(ROOT, 'README.md'), 'utf8')
  const match = new RegExp(`<!-- tested: ${marker} -->\\n\`\`\`\\w+\\n([\\s\\S]*?)\\n\`\`\``).exec(readme)
  if (!match) throw new Error(`README.md has no block marked "tested: ${marker}"`)
  return match[1]
}
