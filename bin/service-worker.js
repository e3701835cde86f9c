#!/usr/bin/env node
import './require-node.js'
import './hold-young-generation.js'
import './hold-turbofan.js'

import {execute} from '@oclif/core'

await execute({args: ['worker', ...process.argv.slice(2)], dir: import.meta.url})
