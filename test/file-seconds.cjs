// Each test file's time in the last run on this machine, kept in the test cache (SERVICE_TEST_CACHE, as
// test/helpers/python-tools.ts reads it): the summary reporter records them, test/longest-first.mjs orders by them.
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')

const secondsFile = () => path.join(process.env.SERVICE_TEST_CACHE || path.join(os.homedir(), '.cache', 'service-test'), 'test-file-seconds.json')

/** Seconds by file path (relative to the repository); empty where no run has recorded any or the file is cut short. */
function readSeconds() {
  try {
    return JSON.parse(fs.readFileSync(secondsFile(), 'utf8'))
  } catch {
    return {}
  }
}

/** Merges a run's times into those recorded, written whole and renamed into place. */
function recordSeconds(secondsByFile) {
  const file = secondsFile()
  const known = readSeconds()
  for (const [name, seconds] of secondsByFile) known[name] = Math.round(seconds * 10) / 10
  fs.mkdirSync(path.dirname(file), {recursive: true})
  const partial = `${file}.${process.pid}`
  fs.writeFileSync(partial, `${JSON.stringify(known, null, 1)}\n`, {mode: 0o600})
  fs.renameSync(partial, file)
}

module.exports = {readSeconds, recordSeconds}
