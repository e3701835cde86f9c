// Mocha's spec output, then the ten slowest test files (each file's top-level suites, hooks included, by wall
// time), and last the plain closing line CI reads: "N passed, N failed, N skipped".
const path = require('node:path')
const Mocha = require('mocha')

const {EVENT_RUN_END, EVENT_SUITE_BEGIN, EVENT_SUITE_END} = Mocha.Runner.constants
const SLOWEST_SHOWN = 10

class SummaryReporter extends Mocha.reporters.Spec {
  constructor(runner, options) {
    super(runner, options)
    const started = new Map()
    const secondsByFile = new Map()
    const topLevel = (suite) => suite.file && suite.parent && suite.parent.root
    runner.on(EVENT_SUITE_BEGIN, (suite) => {
      if (topLevel(suite)) started.set(suite, process.hrtime.bigint())
    })
    runner.on(EVENT_SUITE_END, (suite) => {
      const start = started.get(suite)
      if (start === undefined) return
      const file = path.relative(process.cwd(), suite.file)
      secondsByFile.set(file, (secondsByFile.get(file) ?? 0) + Number(process.hrtime.bigint() - start) / 1e9)
    })
    runner.once(EVENT_RUN_END, () => {
      const slowest = [...secondsByFile].sort((a, b) => b[1] - a[1]).slice(0, SLOWEST_SHOWN)
      if (slowest.length > 0) {
        const total = [...secondsByFile.values()].reduce((sum, seconds) => sum + seconds, 0)
        process.stdout.write(`\nSlowest test files (of ${secondsByFile.size}, ${Math.round(total)} s in all):\n`)
        for (const [file, seconds] of slowest) process.stdout.write(`${seconds.toFixed(1).padStart(8)} s  ${file}\n`)
      }

      const {failures, passes, pending} = runner.stats
      process.stdout.write(`\n${passes} passed, ${failures} failed, ${pending} skipped\n`)
    })
  }
}

module.exports = SummaryReporter
