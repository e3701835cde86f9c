// Prints the suite's test files, the longest first by the times the summary reporter recorded in the test cache:
// mocha's parallel workers take files in the order given, so a long file started last would be the run's tail.
// Files with no recorded time (new ones, or every one on a fresh machine) go first, end-to-end before unit.
import {globSync} from 'node:fs'

import fileSeconds from './file-seconds.cjs'

const seconds = fileSeconds.readSeconds()
const rank = (file) => seconds[file] ?? (file.startsWith('test/e2e/') ? Number.MAX_SAFE_INTEGER : Number.MAX_SAFE_INTEGER - 1)
const files = globSync('test/**/*.test.ts').sort()
process.stdout.write(`${files.sort((a, b) => rank(b) - rank(a)).join('\n')}\n`)
