/**
 * The suite's reporter, run by a real mocha on two fixture files, serially and in parallel workers: the slowest files
 * by their tests' and hooks' time, then CI's closing line; and the order test/longest-first.mjs gives the next run.
 */
import {expect} from 'chai'
import {execa} from 'execa'
import {readFile, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import {ROOT, temporaryDirectory} from '../helpers/service.js'

const FIXTURES = join(ROOT, 'test/fixtures/reporter')
const QUICK = 'test/fixtures/reporter/quick.fixture.cjs'
const SLOW = 'test/fixtures/reporter/slow.fixture.cjs'

async function report(cache: string, parallel: string[]) {
  const {stdout} = await execa(
    join(ROOT, 'node_modules/.bin/mocha'),
    ['--no-config', ...parallel, '--reporter', join(ROOT, 'test/summary-reporter.cjs'), join(FIXTURES, 'quick.fixture.cjs'), join(FIXTURES, 'slow.fixture.cjs')],
    {cwd: ROOT, env: {SERVICE_TEST_CACHE: cache}},
  )
  return stdout.trimEnd().split('\n')
}

describe('summary reporter', () => {
  for (const [mode, parallel] of [
    ['serially', []],
    ['in parallel workers', ['--parallel', '--jobs', '2']],
  ] as const) {
    it(`lists the slowest test files, hooks counted, records their times and ends with the plain closing line, run ${mode}`, async () => {
      const cache = await temporaryDirectory()
      const lines = await report(cache, [...parallel])
      expect(lines.at(-1)).to.equal('2 passed, 0 failed, 1 skipped')
      const heading = lines.findIndex((line) => /^Slowest test files \(of 2, \d+ s in all, run in \d+ s\):$/.test(line))
      expect(heading, lines.join('\n')).to.be.greaterThan(0)
      const [slow, quick] = lines.slice(heading + 1, heading + 3)
      expect(slow).to.match(/^ +\d+\.\d s {2}test\/fixtures\/reporter\/slow\.fixture\.cjs$/)
      expect(quick).to.match(/^ +\d+\.\d s {2}test\/fixtures\/reporter\/quick\.fixture\.cjs$/)
      expect(Number.parseFloat(slow), 'the 300 ms hook is counted').to.be.at.least(0.3)

      const recorded = JSON.parse(await readFile(join(cache, 'test-file-seconds.json'), 'utf8'))
      expect(Object.keys(recorded).sort()).to.deep.equal([QUICK, SLOW])
      expect(recorded[SLOW]).to.be.at.least(0.3)
    })
  }

  it('merges a run into the times recorded before, and the next run starts the longest files first, unknown ones before them', async () => {
    const cache = await temporaryDirectory()
    await writeFile(join(cache, 'test-file-seconds.json'), JSON.stringify({'test/e2e/openai-api.test.ts': 5, 'test/unit/kernel.test.ts': 900}))
    await report(cache, [])
    const recorded = JSON.parse(await readFile(join(cache, 'test-file-seconds.json'), 'utf8'))
    expect(Object.keys(recorded).sort()).to.deep.equal(['test/e2e/openai-api.test.ts', QUICK, SLOW, 'test/unit/kernel.test.ts'])

    await writeFile(join(cache, 'test-file-seconds.json'), JSON.stringify({...recorded, 'test/unit/sse.test.ts': 0}))
    const {stdout} = await execa('node', [join(ROOT, 'test/longest-first.mjs')], {cwd: ROOT, env: {SERVICE_TEST_CACHE: cache}})
    const files = stdout.trim().split('\n')
    expect(files).to.include.members(['test/unit/summary-reporter.test.ts', 'test/e2e/readme.test.ts'])
    expect(files).to.not.include(QUICK)
    const known = files.filter((file) => file in recorded || file === 'test/unit/sse.test.ts')
    expect(known).to.deep.equal(['test/unit/kernel.test.ts', 'test/e2e/openai-api.test.ts', 'test/unit/sse.test.ts'])
    expect(files.indexOf('test/e2e/readme.test.ts'), 'a file without a time goes first').to.be.lessThan(files.indexOf('test/unit/kernel.test.ts'))
    expect(files.at(-1)).to.equal('test/unit/sse.test.ts')
  })
})
