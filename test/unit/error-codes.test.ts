import {expect} from 'chai'
import {readdir, readFile} from 'node:fs/promises'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'

import {ERROR_CODES, errorFactory} from '../../src/kernel/errors.js'

const root = fileURLToPath(new URL('../..', import.meta.url))

/** Where an error code is written as a literal: made, set, or compared. */
const CODE_LITERALS = [/new ServiceError\(\s*\d+,\s*'([a-z_]+)'/g, /\.create\(\s*\d+,\s*'([a-z_]+)'/g, /(?<!typeof [\w.]*)\bcode\s*(?::|===|!==)\s*'([a-z_]+)'/g]

async function sources(folder: string): Promise<string[]> {
  const entries = await readdir(join(root, folder), {recursive: true, withFileTypes: true})
  return entries
    .filter((entry) => entry.isFile() && /\.(ts|js)$/.test(entry.name) && !entry.parentPath.includes('/dist') && !entry.parentPath.includes('node_modules'))
    .map((entry) => join(entry.parentPath, entry.name))
}

describe('error codes', () => {
  it('lists every code the sources, the plugins and the templates use', async () => {
    const files = [...(await sources('src')), ...(await sources('plugins')), ...(await sources('templates'))]
    const used = new Map<string, string>()
    for (const file of files) {
      const text = await readFile(file, 'utf8')
      for (const pattern of CODE_LITERALS) for (const [, code] of text.matchAll(pattern)) used.set(code, file.slice(root.length))
    }

    expect(used.size).to.be.greaterThan(20)
    const missing = [...used].filter(([code]) => !(ERROR_CODES as readonly string[]).includes(code))
    expect(missing, 'codes used but missing from ERROR_CODES (src/kernel/errors.ts), with a file that uses each').to.deep.equal([])
  })

  it('gives plugins errors the kernel renders with their status, code and param', () => {
    expect(errorFactory.badRequest('no prompt', 'prompt').toJSON()).to.deep.equal({code: 'invalid_request', message: 'no prompt', param: 'prompt', status: 400})
    expect(errorFactory.create(501, 'unsupported', 'not here').toJSON()).to.deep.equal({code: 'unsupported', message: 'not here', param: null, status: 501})
    expect(errorFactory.notFound('gone').status).to.equal(404)
  })
})
