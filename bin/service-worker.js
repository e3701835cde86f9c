#!/usr/bin/env node
import './require-node.js'
import './hold-young-generation.js'
import './hold-turbofan.js'

import {runCommandLine} from './run-command-line.js'

runCommandLine(['worker', ...process.argv.slice(2)], import.meta.url)
