import type {Hook} from '@oclif/core'

import {TWO_LETTER_FLAGS} from '../cli/two-letter-flags.js'

const hook: Hook.Preparse = async ({argv}) => argv.map((arg) => TWO_LETTER_FLAGS[arg] ?? arg)

export default hook
