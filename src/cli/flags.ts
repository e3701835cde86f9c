/**
 * Flags whose values oclif has no parser for; each refuses a wrong value as oclif's own integer flag does (a
 * CLIError: exit code 2, the flag named, what it wants).
 */
import {Errors, Flags} from '@oclif/core'

function parseNumber(input: string): number {
  const value = Number(input)
  // Number('') is 0 and Number('Infinity') is Infinity: neither is a number anyone meant to type.
  if (input.trim() === '' || !Number.isFinite(value)) throw new Errors.CLIError(`Expected a number (e.g. 0.7) but received: ${input}`)
  return value
}

/** A decimal number, such as a sampling temperature. */
export const numberFlag = Flags.custom<number>({parse: async (input) => parseNumber(input)})

/** `auto`, or a whole number of GPUs. */
export const gpuCountFlag = Flags.custom<'auto' | number>({
  async parse(input) {
    if (input === 'auto') return 'auto'
    const value = Number(input)
    if (input.trim() === '' || !Number.isInteger(value) || value < 0) throw new Errors.CLIError(`Expected "auto" or a whole number of GPUs (e.g. 1) but received: ${input}`)
    return value
  },
})
