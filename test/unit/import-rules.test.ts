/**
 * The folders of src/ are layers, and imports point down: this reads every import of every source file and
 * checks it against the table of directions allowed, so the architecture docs/architecture.md describes stays true.
 */
import {expect} from 'chai'
import {readdirSync, readFileSync} from 'node:fs'
import {dirname, join, normalize, relative} from 'node:path'

import {ROOT} from '../helpers/service.js'

const SRC = join(ROOT, 'src')

/**
 * What each folder may import besides itself: a folder name allows all of it, a file path only that file.
 * service/ is the one place that wires the cluster and the server together; the protocol and the client stay
 * free of both (the client runs in a browser), and the CLI helpers reach the service only through the client.
 */
const ALLOWED: Record<string, string[]> = {
  auth: ['kernel'],
  cli: ['client', 'kernel', 'protocol', 'service', 'util'],
  client: ['protocol', 'kernel/errors.ts'],
  cluster: ['client', 'kernel', 'model-process', 'protocol', 'python-env', 'util', 'weights'],
  commands: ['auth', 'cli', 'client', 'kernel', 'protocol', 'service', 'util'],
  hooks: ['cli', 'kernel'],
  kernel: [],
  'model-process': ['kernel', 'protocol', 'util'],
  protocol: ['kernel/contracts.ts', 'kernel/errors.ts', 'kernel/schema.ts'],
  'python-env': ['kernel', 'model-process', 'protocol'],
  server: ['auth', 'kernel', 'protocol', 'util'],
  service: ['auth', 'cluster', 'kernel', 'protocol', 'python-env', 'server', 'util', 'weights'],
  util: ['kernel'],
  weights: ['kernel', 'protocol', 'util'],
}

const IMPORT = /(?:^|\n)\s*(?:import|export)\b[^'"]*?from\s*['"](\.{1,2}\/[^'"]+)['"]|import\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)|(?:^|\n)\s*import\s+['"](\.{1,2}\/[^'"]+)['"]/g

function sourceFiles(folder: string): string[] {
  return readdirSync(folder, {withFileTypes: true}).flatMap((entry) =>
    entry.isDirectory() ? sourceFiles(join(folder, entry.name)) : entry.name.endsWith('.ts') ? [join(folder, entry.name)] : [],
  )
}

/** Every relative import in src/ as [importing file, imported file], both relative to src/ (with .ts). */
function imports(): Array<[string, string]> {
  return sourceFiles(SRC).flatMap((file) =>
    [...readFileSync(file, 'utf8').matchAll(IMPORT)].map((match): [string, string] => [
      relative(SRC, file),
      relative(SRC, normalize(join(dirname(file), match[1] ?? match[2] ?? match[3]))).replace(/\.js$/, '.ts'),
    ]),
  )
}

/** Whether an import goes a way the table allows; files at the top of src/ (index.ts) may import anything. */
function allowed(from: string, to: string): boolean {
  const [fromFolder] = from.split('/')
  const [toFolder] = to.split('/')
  if (!from.includes('/') || fromFolder === toFolder) return true
  const rules = ALLOWED[fromFolder]
  if (!rules) throw new Error(`src/${fromFolder}/ is not in the import rules; add it to ALLOWED with the folders it may import`)
  return rules.some((rule) => rule === toFolder || rule === to)
}

describe('import rules', () => {
  it('finds the imports it checks', () => {
    const found = imports()
    expect(found).to.deep.include(['cluster/supervisor.ts', 'cluster/placement.ts'])
    expect(found).to.deep.include(['service/local.ts', 'server/app.ts'])
  })

  it('every import in src/ points the way the table allows', () => {
    const wrong = imports()
      .filter(([from, to]) => !allowed(from, to))
      .map(([from, to]) => `${from} imports ${to}`)
    expect(wrong).to.deep.equal([])
  })

  it('refuses an import that runs back up, such as the server reaching into the cluster', () => {
    expect(allowed('server/routes/core.ts', 'cluster/supervisor.ts')).to.equal(false)
    expect(allowed('cluster/worker-link.ts', 'server/app.ts')).to.equal(false)
    expect(allowed('client/client.ts', 'kernel/schema.ts')).to.equal(false)
    expect(allowed('cli/service-command.ts', 'cluster/supervisor.ts')).to.equal(false)
    expect(allowed('protocol/launch.ts', 'cluster/worker.ts')).to.equal(false)
  })
})
