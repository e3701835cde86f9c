// Mocha's spec output, then the ten slowest test files, and last the plain closing line CI reads: "N passed,
// N failed, N skipped". A file's time is the sum of its tests' and hooks' durations: mocha reports those in serial
// and in parallel runs alike, where a parallel run replays each file's events only once the file has finished.
// The times are also recorded (test/file-seconds.cjs), for test/longest-first.mjs to start the longest files first.
const path = require('node:path')
const Mocha = require('mocha')

const {recordSeconds} = require('./file-seconds.cjs')

const {EVENT_HOOK_END, EVENT_RUN_END, EVENT_TEST_END} = Mocha.Runner.constants
const SLOWEST_SHOWN = 10

class SummaryReporter extends Mocha.reporters.Spec {
  constructor(runner, options) {
    super(runner, options)
    const secondsByFile = new Map()
    const started = process.hrtime.bigint()
    const count = (runnable) => {
      if (!runnable.file || typeof runnable.duration !== 'number') return
      const file = path.relative(process.cwd(), runnable.file)
      secondsByFile.set(file, (secondsByFile.get(file) ?? 0) + runnable.duration / 1000)
    }

    runner.on(EVENT_TEST_END, count)
    runner.on(EVENT_HOOK_END, count)
    runner.once(EVENT_RUN_END, () => {
      const slowest = [...secondsByFile].sort((a, b) => b[1] - a[1]).slice(0, SLOWEST_SHOWN)
      if (slowest.length > 0) {
        const total = [...secondsByFile.values()].reduce((sum, seconds) => sum + seconds, 0)
        const wall = Number(process.hrtime.bigint() - started) / 1e9
        process.stdout.write(`\nSlowest test files (of ${secondsByFile.size}, ${Math.round(total)} s in all, run in ${Math.round(wall)} s):\n`)
        for (const [file, seconds] of slowest) process.stdout.write(`${seconds.toFixed(1).padStart(8)} s  ${file}\n`)
        recordSeconds(secondsByFile)
      }

      const {failures, passes, pending} = runner.stats
      process.stdout.write(`\n${passes} passed, ${failures} failed, ${pending} skipped\n`)
    })
  }
}

module.exports = SummaryReporter
