// Mocha's spec output, plus the plain closing line CI reads: "N passed, N failed, N skipped".
const Mocha = require('mocha')

class SummaryReporter extends Mocha.reporters.Spec {
  constructor(runner, options) {
    super(runner, options)
    runner.once(Mocha.Runner.constants.EVENT_RUN_END, () => {
      const {failures, passes, pending} = runner.stats
      process.stdout.write(`\n${passes} passed, ${failures} failed, ${pending} skipped\n`)
    })
  }
}

module.exports = SummaryReporter
