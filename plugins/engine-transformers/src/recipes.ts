/**
 * The random-weight models this engine makes for the catalogue's `generated` pytorch specs (`tiny-random-llm -f
 * pytorch`): python/make_tiny_model.py has transformers build each from a config with a fixed seed and save it as
 * safetensors with its tokenizer, in the engine's virtual environment; likewise `tiny-random-embedding`,
`tiny-random-rerank`, `tiny-random-ocr` (GOT-OCR 2.0 with its processor) and `tiny-random-vlm` (LLaVA with its processor). The spec names the files, in this order.
 */
import type {WeightsGenerationRequest} from 'service-toolkit'

import {spawn} from 'node:child_process'
import {fileURLToPath} from 'node:url'

const MAKER = fileURLToPath(new URL('../python/make_tiny_model.py', import.meta.url))

/** The files of each recipe, in the order the catalogue spec's parts name them. */
export const RECIPE_FILES: Record<string, string[]> = {
  'tiny-random-bert-embedding': ['config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json'],
  'tiny-random-bert-reranker': ['config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json'],
  'tiny-random-got-ocr2': ['config.json', 'generation_config.json', 'model.safetensors', 'processor_config.json', 'tokenizer.json', 'tokenizer_config.json'],
  'tiny-random-llava': ['config.json', 'generation_config.json', 'model.safetensors', 'processor_config.json', 'tokenizer.json', 'tokenizer_config.json', 'chat_template.jinja'],
  'tiny-random-llama': ['config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json', 'chat_template.jinja'],
}

const LAST_LINES = 5

export async function generateRecipe({files, python, recipe, signal}: WeightsGenerationRequest): Promise<void> {
  const names = RECIPE_FILES[recipe]
  if (!python) throw new Error(`the ${recipe} recipe runs in the engine's Python environment, and the service gave none`)
  if (names?.length !== files.length) throw new Error(`the ${recipe} recipe makes ${names?.join(', ')}, and the spec names ${files.length} files`)
  const targets = names.map((name, index) => `${name}=${files[index]}`)
  const child = spawn(python.executable, ['-u', MAKER, recipe, ...targets], {env: {...process.env, HF_HUB_OFFLINE: '1'}, signal, stdio: ['ignore', 'pipe', 'pipe']})
  let output = ''
  const keep = (chunk: Buffer) => (output = (output + chunk.toString()).slice(-4000))
  child.stdout.on('data', keep)
  child.stderr.on('data', keep)
  const exitCode = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject)
    child.once('close', resolve)
  })
  if (exitCode !== 0) {
    const lines = output.split('\n').filter((line) => line.trim() !== '').slice(-LAST_LINES)
    throw new Error(`make_tiny_model.py ${recipe} exited with code ${exitCode}: ${lines.join(' | ')}`)
  }
}
