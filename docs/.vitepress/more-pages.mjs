import {readdirSync, readFileSync} from 'node:fs'
import {join} from 'node:path'

/**
 * Sidebar items for the pages of `folder` that `listed` (file names) leaves out, by file name, each titled by its first
 * `# ` heading: a page added to docs/ shows up in the sidebar without anyone editing the config.
 */
export function morePages(folder, listed) {
  return readdirSync(folder)
    .filter((file) => file.endsWith('.md') && file !== 'index.md' && !listed.has(file))
    .sort()
    .map((file) => {
      const title = /^# (.+)$/m.exec(readFileSync(join(folder, file), 'utf8'))?.[1]
      return {text: title ? title.replaceAll('`', '') : file.slice(0, -3), link: `/${file.slice(0, -3)}`}
    })
}
