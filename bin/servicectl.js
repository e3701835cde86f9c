#!/usr/bin/env node
import './require-node.js'

import {moveLeadingGlobalFlags} from '../dist/cli/global-flags.js'
import {runCommandLine} from './run-command-line.js'

runCommandLine(moveLeadingGlobalFlags(process.argv.slice(2)), import.meta.url, {endOnClosedStdout: true})
