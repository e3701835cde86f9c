/**
 * The documentation: a README short enough to read, the VitePress site built from docs/ with no network, no broken
 * link or anchor in the README or the pages, and every shell or code block either run by a test or saying why not.
 */
import {expect} from 'chai'
import {execa} from 'execa'
import {existsSync} from 'node:fs'
import {mkdtemp, readdir, readFile, rm, writeFile} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import {dirname, join, normalize} from 'node:path'

import {morePages} from '../../docs/.vitepress/more-pages.mjs'
import {slugify} from '../../docs/.vitepress/slugify.mjs'
import {documentationPages, readmeBlock} from '../helpers/readme.js'
import {ROOT} from '../helpers/service.js'

const CHECKED_LANGUAGES = new Set(['sh', 'bash', 'shell', 'js', 'javascript', 'ts', 'typescript', 'python', 'py'])
const INCLUDE = /<!--\s*@include:\s*(.*?)\s*-->/g
const FENCE = /^(`{3,}|~{3,})\s*([\w-]*)/

/** A page's text with VitePress's `<!--@include: path#region-->` directives replaced by what they include. */
async function expandIncludes(path: string, text: string): Promise<string> {
  const parts = await Promise.all([...text.matchAll(INCLUDE)].map(async ([directive, target]) => {
    const [file, region] = target.split('#')
    const included = await readFile(join(ROOT, dirname(path), file), 'utf8')
    if (!region) return [directive, included] as const
    const start = included.indexOf(`<!-- #region ${region} -->`)
    const end = included.indexOf(`<!-- #endregion ${region} -->`)
    if (start < 0 || end < start) throw new Error(`${path} includes region ${region} of ${file}, which has none`)
    return [directive, included.slice(included.indexOf('\n', start) + 1, end)] as const
  }))
  return parts.reduce((expanded, [directive, included]) => expanded.replace(directive, included), text)
}

/** The lines of a page outside fenced code blocks, with inline code blanked out. */
function prose(text: string): string[] {
  let fence = ''
  return text.split('\n').map((line) => {
    const opening = FENCE.exec(line)
    if (fence) {
      if (line.trim() === fence) fence = ''
      return ''
    }
    if (opening) {
      fence = opening[1]
      return ''
    }
    return line.replace(/`+[^`]*`+/g, '``')
  })
}

/** The anchors of a page's headings as VitePress makes them: code spans keep their text, duplicates are numbered. */
function headingAnchors(text: string): Set<string> {
  const result = new Set<string>()
  let fence = false
  const seen = new Map<string, number>()
  for (const line of text.split('\n')) {
    if (FENCE.test(line)) fence = !fence
    const heading = !fence && /^#{1,6} (.+?)\s*$/.exec(line)
    if (!heading) continue
    const explicit = /\{#([\w-]+)\}$/.exec(heading[1])
    const slug = explicit ? explicit[1] : slugify(heading[1].replace(/\[([^\]]*)\]\([^)]*\)/g, '$1').replace(/[`*]/g, ''))
    const count = seen.get(slug) ?? 0
    seen.set(slug, count + 1)
    result.add(count === 0 ? slug : `${slug}-${count}`)
  }
  return result
}

describe('documentation', () => {
  // The command-line reference is generated (and not committed), and the pages link to it.
  before(async () => execa('node', ['scripts/docs-cli-reference.mjs'], {cwd: ROOT}))

  it('keeps the README to at most 250 lines', async () => {
    const lines = (await readFile(join(ROOT, 'README.md'), 'utf8')).trimEnd().split('\n')
    expect(lines.length).to.be.at.most(250)
  })

  it("shows in the README the test command that .ci/run runs", async () => {
    const ci = (await readFile(join(ROOT, '.ci/run'), 'utf8')).trimEnd().split('\n').at(-1)
    expect(await readmeBlock('run-the-tests')).to.equal(ci)
  })

  it('has no link to a missing page, file or heading in the README, SECURITY.md or the pages under docs/', async () => {
    const pages = new Map<string, string>()
    for (const {path, text} of await documentationPages()) pages.set(path, path === 'README.md' ? text : await expandIncludes(path, text))
    pages.set('SECURITY.md', await readFile(join(ROOT, 'SECURITY.md'), 'utf8'))
    const broken: string[] = []
    for (const [path, text] of pages) {
      for (const [, target] of prose(text).join('\n').matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
        if (/^[a-z][\w+.-]*:/i.test(target)) continue
        const [file, anchor] = target.split('#')
        const resolved = file ? normalize(join(dirname(path), decodeURIComponent(file))) : path
        const linked = pages.get(resolved) ?? (existsSync(join(ROOT, resolved)) ? '' : undefined)
        if (linked === undefined) broken.push(`${path}: ${target} (no such file)`)
        else if (anchor !== undefined && !headingAnchors(linked).has(anchor)) broken.push(`${path}: ${target} (no such heading)`)
      }
    }
    expect(broken).to.deep.equal([])
  })

  it('runs each sh, bash, js, ts and python block in a test, or says on the page why it cannot run here', async () => {
    const tests = (await readdir(join(ROOT, 'test'), {recursive: true})).filter((file) => file.endsWith('.ts'))
    const testText = (await Promise.all(tests.map((file) => readFile(join(ROOT, 'test', file), 'utf8')))).join('\n')
    const unexplained: string[] = []
    for (const {path, text} of await documentationPages()) {
      const lines = text.split('\n')
      let fence = ''
      for (const [index, line] of lines.entries()) {
        const opening = FENCE.exec(line)
        if (fence) {
          if (line.trim() === fence) fence = ''
          continue
        }
        if (!opening) continue
        fence = opening[1]
        if (!CHECKED_LANGUAGES.has(opening[2])) continue
        const marker = /^<!-- (tested: ([\w-]+)|not run: \S.*) -->$/.exec(lines[index - 1] ?? '')
        if (!marker) unexplained.push(`${path}:${index + 1} has neither <!-- tested: NAME --> nor <!-- not run: why --> above it`)
        else if (marker[2] && !testText.includes(`'${marker[2]}'`)) unexplained.push(`${path}:${index + 1} is marked tested: ${marker[2]}, which no test reads`)
      }
    }
    expect(unexplained).to.deep.equal([])
  })

  it('lists in the sidebar a page that the config does not name, under its title', async () => {
    const folder = await mkdtemp(join(tmpdir(), 'docs-pages-'))
    try {
      await writeFile(join(folder, 'index.md'), '---\nlayout: home\n---\n')
      await writeFile(join(folder, 'listed.md'), '# Listed\n')
      await writeFile(join(folder, 'new-page.md'), 'Intro\n\n# The `new` page\n')
      await writeFile(join(folder, 'untitled.md'), 'No heading\n')
      expect(morePages(folder, new Set(['listed.md']))).to.deep.equal([
        {text: 'The new page', link: '/new-page'},
        {text: 'untitled', link: '/untitled'},
      ])
    } finally {
      await rm(folder, {force: true, recursive: true})
    }
  })

  it('builds the site with `npm run docs`, with no network where the machine can take it away: every page, search, version', async function () {
    this.timeout(180_000)
    const offline = (await execa('unshare', ['-rn', 'true'], {reject: false}).catch(() => ({exitCode: 1}))).exitCode === 0
    const started = Date.now()
    const build = offline
      ? await execa('unshare', ['-rn', 'npm', 'run', 'docs'], {cwd: ROOT, reject: false, all: true})
      : await execa('npm', ['run', 'docs'], {cwd: ROOT, reject: false, all: true})
    expect(build.exitCode, build.all).to.equal(0)
    console.log(`      docs built in ${((Date.now() - started) / 1000).toFixed(1)} s${offline ? ', without network' : ''}`)

    const dist = join(ROOT, 'docs/.vitepress/dist')
    const built = new Set(await readdir(dist))
    const sources = (await readdir(join(ROOT, 'docs'))).filter((file) => file.endsWith('.md'))
    expect(sources).to.include.members(['cli-reference.md', 'compatibility.md', 'getting-started.md'])
    for (const source of sources) expect(built, source).to.include(source.replace(/\.md$/, '.html'))
    const chunks = await readdir(join(dist, 'assets/chunks'))
    expect(chunks.some((file) => file.startsWith('@localSearchIndexroot')), 'local search index').to.equal(true)
    const {version} = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8'))
    expect(await readFile(join(dist, 'index.html'), 'utf8')).to.contain(`v${version}`)
  })
})
