#!/usr/bin/env node
import './require-node.js'

import {execute} from '@oclif/core'

await execute({dir: import.meta.url})
