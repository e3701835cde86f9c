/** The suite's reporter, run by a real mocha on two fixture files: the slowest files by wall time (hooks too), then CI's closing line. */
import {expect} from 'chai'
import {execa} from 'execa'
import {join} from 'node:path'

import {ROOT} from '../helpers/service.js'

describe('summary reporter', () => {
  it('lists the slowest test files, hooks counted, and ends with the plain closing line', async () => {
    const fixtures = join(ROOT, 'test/fixtures/reporter')
    const {stdout} = await execa(
      join(ROOT, 'node_modules/.bin/mocha'),
      ['--no-config', '--reporter', join(ROOT, 'test/summary-reporter.cjs'), join(fixtures, 'quick.fixture.cjs'), join(fixtures, 'slow.fixture.cjs')],
      {cwd: ROOT},
    )
    const lines = stdout.trimEnd().split('\n')
    expect(lines.at(-1)).to.equal('2 passed, 0 failed, 1 skipped')
    const heading = lines.findIndex((line) => line.startsWith('Slowest test files (of 2, '))
    expect(heading, stdout).to.be.greaterThan(0)
    const [slow, quick] = lines.slice(heading + 1, heading + 3)
    expect(slow).to.match(/^ +\d+\.\d s {2}test\/fixtures\/reporter\/slow\.fixture\.cjs$/)
    expect(quick).to.match(/^ +\d+\.\d s {2}test\/fixtures\/reporter\/quick\.fixture\.cjs$/)
    expect(Number.parseFloat(slow), 'the 300 ms hook is counted').to.be.at.least(0.3)
  })
})
