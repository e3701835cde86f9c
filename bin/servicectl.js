#!/usr/bin/env node
import './require-node.js'

import {execute} from '@oclif/core'

import {moveLeadingGlobalFlags} from '../dist/cli/global-flags.js'

await execute({args: moveLeadingGlobalFlags(process.argv.slice(2)), dir: import.meta.url})
