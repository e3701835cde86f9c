import {Errors, Flags} from '@oclif/core'
import {stat, writeFile} from 'node:fs/promises'
import {dirname} from 'node:path'

/** The flags `servicectl image` and `video` share, as the generation routes share their fields. */
export const generationFlags = {
  'model-uid': Flags.string({char: 'u', description: 'Uid of the model.', required: true}),
  'negative-prompt': Flags.string({description: 'What it should not show.'}),
  seed: Flags.integer({description: 'Makes the result reproducible.', min: 0}),
  size: Flags.string({description: 'WIDTHxHEIGHT (default: the model\'s, or the picture\'s).'}),
  steps: Flags.integer({description: 'Denoising steps.', min: 1}),
}

/**
 * Stops the command (exit code 2) when files cannot be written at `path`, its folder missing or no folder, so that it
 * says so before it asks a model for minutes of work.
 */
export async function checkOutputFolder(path: string): Promise<void> {
  const folder = dirname(path)
  const found = await stat(folder).catch(() => undefined)
  const why = !found ? `the folder ${folder} does not exist; create it, or give another --output.` : found.isDirectory() ? undefined : `${folder} is not a folder; give another --output.`
  if (why) throw new Errors.CLIError(`--output ${path}: ${why}`, {exit: 2})
}

/** Writes base64 results as PREFIX-1.EXT, PREFIX-2.EXT, …, and answers the names written. */
export async function writeGenerated(items: string[], prefix: string, extension: string): Promise<string[]> {
  const files = items.map((_, index) => `${prefix}-${index + 1}.${extension}`)
  await Promise.all(items.map((item, index) => writeFile(files[index], Buffer.from(item, 'base64'))))
  return files
}
