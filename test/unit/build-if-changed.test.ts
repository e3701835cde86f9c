/** `npm start` builds only when a file the build reads changed since the last finished build (scripts/build-if-changed.mjs). */
import {expect} from 'chai'
import {mkdir, utimes, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import {buildIsCurrent, newestSource} from '../../scripts/build-if-changed.mjs'
import {temporaryDirectory} from '../helpers/service.js'

describe('npm start: build only when something changed', () => {
  it('is current after a build, and stale once a source (a plugin\'s too) is newer, or with no build at all', async () => {
    const root = await temporaryDirectory('build-stamp-')
    for (const folder of ['src', 'web/src', 'plugins/engine-x/src', 'dist', 'plugins/engine-x/dist']) await mkdir(join(root, folder), {recursive: true})
    const at = (seconds: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, seconds))
    const touch = async (file: string, seconds: number) => {
      await writeFile(join(root, file), '')
      await utimes(join(root, file), at(seconds), at(seconds))
    }

    await touch('src/index.ts', 1)
    await touch('web/src/main.tsx', 2)
    await touch('plugins/engine-x/src/register.ts', 3)
    await touch('plugins/engine-x/dist/register.js', 50)
    const stamp = join(root, 'dist', '.build-finished')
    expect(buildIsCurrent(root, stamp), 'never built').to.equal(false)
    expect(newestSource(root), 'build outputs are not sources').to.equal(at(3).getTime())
    await touch('dist/.build-finished', 10)
    expect(buildIsCurrent(root, stamp)).to.equal(true)
    await touch('plugins/engine-x/src/register.ts', 11)
    expect(buildIsCurrent(root, stamp), 'a plugin changed').to.equal(false)
    await touch('dist/.build-finished', 12)
    await touch('web/src/main.tsx', 13)
    expect(buildIsCurrent(root, stamp), 'the web interface changed').to.equal(false)
  })
})
