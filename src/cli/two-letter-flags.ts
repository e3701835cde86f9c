/**
 * Xinference's CLI has two-letter short options (`-ak`, `-en`, …) that oclif's one-character short flags
 * cannot declare; they are rewritten to their long names (src/hooks/preparse.ts) so users' muscle memory and
 * scripts keep working.
 */
export const TWO_LETTER_FLAGS: Record<string, string> = {
  '-ak': '--api-key',
  '-en': '--model-engine',
}
