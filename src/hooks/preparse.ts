import type {Hook} from '@oclif/core'

/**
 * Xinference's CLI has two-letter short options (`-ak`, `-en`, …) that oclif's one-character short flags
 * cannot declare; they are rewritten to their long names so users' muscle memory and scripts keep working.
 */
const TWO_LETTER_FLAGS: Record<string, string> = {
  '-ak': '--api-key',
  '-en': '--model-engine',
}

const hook: Hook.Preparse = async ({argv}) => argv.map((arg) => TWO_LETTER_FLAGS[arg] ?? arg)

export default hook
