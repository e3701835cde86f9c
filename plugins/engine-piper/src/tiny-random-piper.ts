/**
 * `tiny-random-piper`: a Piper voice in Piper's own format (an ONNX VITS graph and its .onnx.json) with random weights
 * and three speakers, which python/tiny_random_piper.py builds with Piper's training code and exports as Piper's
 * exporter does, in an environment with PyTorch beside piper-tts. It speaks noise, for trying the speech route with
 * Piper's real inference and for CI. The spec names the .onnx file, then its .onnx.json.
 */
import type {WeightsGenerationRequest} from 'service-toolkit'

import {execFile} from 'node:child_process'
import {fileURLToPath} from 'node:url'
import {promisify} from 'node:util'

const MAKER = fileURLToPath(new URL('../python/tiny_random_piper.py', import.meta.url))

export const RECIPE_NAMES = ['tiny-random-piper']

/** What the maker needs: Piper's model code, PyTorch to build and export it (the CPU build will do), and onnx for the export. */
export const MAKER_PACKAGES = ['torch==2.13.0', 'onnx>=1.16']

export async function generateRecipe({files, python, recipe, signal}: WeightsGenerationRequest): Promise<void> {
  if (recipe !== 'tiny-random-piper') throw new Error(`no Piper recipe named "${recipe}"; there is: ${RECIPE_NAMES.join(', ')}`)
  if (!python) throw new Error('the tiny-random-piper recipe runs in a Python environment, and the service gave none')
  if (files.length !== 2) throw new Error(`the tiny-random-piper recipe makes a .onnx file and its .onnx.json, and the spec names ${files.length} files`)
  try {
    await promisify(execFile)(python.executable, ['-u', MAKER, ...files], {maxBuffer: 16 * 1024 * 1024, signal})
  } catch (error) {
    const {code, stderr} = error as {code?: number | string; stderr?: string}
    const lines = (stderr ?? '').split('\n').filter((line) => line.trim() !== '' && !line.includes('Warning')).slice(-5)
    throw new Error(`tiny_random_piper.py exited with code ${code}: ${lines.join(' | ')}`)
  }
}
