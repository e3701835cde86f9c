/**
 * The random-weight models this engine makes for the catalogue's `generated` specs (`tiny-random-llm`,
 * `tiny-random-embedding`, `tiny-random-rerank`): real GGUF files with a real tokenizer (and, for the chat model, a
 * ChatML template) whose weights are noise, so they speak gibberish. They let a person try the service, and an
 * application's CI test against it, without downloading anything. Each recipe fixes its seed, so it always makes the
 * same bytes, and stays under a megabyte, written in milliseconds.
 */
import type {WeightsGenerationRequest} from 'service-toolkit'

import {writeRandomBertGguf} from './random-bert.js'
import {RANDOM_LLAMA_SIZES, writeRandomLlamaGguf} from './random-llama.js'

const SEED = 42

/** Writes one model file; the path is the file's full name. */
const RECIPES: Record<string, (filePath: string) => Promise<unknown>> = {
  'tiny-random-bert-embedding': (filePath) => writeRandomBertGguf(filePath, {kind: 'embedding', name: 'tiny-random-embedding', seed: SEED}),
  'tiny-random-bert-reranker': (filePath) => writeRandomBertGguf(filePath, {kind: 'reranker', name: 'tiny-random-rerank', seed: SEED}),
  'tiny-random-llama': (filePath) => writeRandomLlamaGguf(filePath, {...RANDOM_LLAMA_SIZES.tiny, name: 'tiny-random-llm', seed: SEED}),
}

export const RECIPE_NAMES = Object.keys(RECIPES)

export async function generateRecipe({files, recipe, signal}: WeightsGenerationRequest): Promise<void> {
  const write = RECIPES[recipe]
  if (!write) throw new Error(`no GGUF recipe named "${recipe}"; there are: ${RECIPE_NAMES.join(', ')}`)
  if (files.length !== 1) throw new Error(`the GGUF recipe ${recipe} makes one file, and ${files.length} were asked for`)
  signal.throwIfAborted()
  await write(files[0])
}
