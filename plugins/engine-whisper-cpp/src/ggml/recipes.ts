/**
 * The random-weight Whisper models this engine makes for the catalogue's `generated` specs: real ggml files that
 * whisper.cpp loads and runs, whose text is noise. Each recipe fixes its seed, so it always makes the same bytes.
 */
import type {WeightsGenerationRequest} from 'service-toolkit'

import {TINY_RANDOM_WHISPER, writeRandomWhisperGgml} from './random-whisper.js'

const RECIPES: Record<string, (filePath: string) => Promise<unknown>> = {
  'tiny-random-whisper': (filePath) => writeRandomWhisperGgml(filePath, TINY_RANDOM_WHISPER),
}

export const RECIPE_NAMES = Object.keys(RECIPES)

export async function generateRecipe({files, recipe, signal}: WeightsGenerationRequest): Promise<void> {
  const write = RECIPES[recipe]
  if (!write) throw new Error(`no ggml recipe named "${recipe}"; there are: ${RECIPE_NAMES.join(', ')}`)
  if (files.length !== 1) throw new Error(`the ggml recipe ${recipe} makes one file, and ${files.length} were asked for`)
  signal.throwIfAborted()
  await write(files[0])
}
