import type {Hook} from '@oclif/core'

import {pluginCommandArguments} from '../cli/plugin-arguments.js'
import {TWO_LETTER_FLAGS} from '../cli/two-letter-flags.js'

const hook: Hook.Preparse = async ({argv, options}) =>
  pluginCommandArguments(
    (options.context as {id?: string} | undefined)?.id,
    argv.map((arg) => TWO_LETTER_FLAGS[arg] ?? arg),
  )

export default hook
