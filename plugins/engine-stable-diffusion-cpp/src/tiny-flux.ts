/**
 * `tiny-random-flux`: a FLUX.1 model in one GGUF file with random weights from a fixed seed (python/tiny_flux.py, in
 * the engine's environment), so the engine runs with no download, on a CPU, in seconds. It draws noise.
 */
import type {ModelFamily, WeightsGenerationRequest} from 'service-toolkit'

import {execFile} from 'node:child_process'
import {promisify} from 'node:util'
import {fileURLToPath} from 'node:url'

const MAKER = fileURLToPath(new URL('../python/tiny_flux.py', import.meta.url))

export const TINY_FLUX: ModelFamily = {
  default_generate_config: {guidance_scale: 3.5, num_inference_steps: 2},
  default_model_config: {height: 64, width: 64},
  model_ability: ['text2image', 'image2image', 'inpainting'],
  model_description:
    'A tiny FLUX.1 model with random weights written on this machine as one GGUF file (one transformer block of each kind, CLIP-L, a small VAE decoder and a VAE encoder for edits; fixed seed): no download, runs on a CPU in seconds with stable-diffusion.cpp, draws noise. For trying and testing the engine.',
  model_family: 'stable_diffusion',
  model_name: 'tiny-random-flux',
  // r2 added the VAE encoder: a new file name, so that a cache holding the first file makes this one.
  model_src: {generated: {gguf_model_file_name_template: 'tiny-random-flux-r2.gguf', gguf_model_id: 'tiny-random-flux'}},
  version: 2,
}

export async function generateTinyFlux({files, python, signal}: WeightsGenerationRequest): Promise<void> {
  if (!python) throw new Error("tiny-random-flux is written in the engine's Python environment, and the service gave none")
  await promisify(execFile)(python.executable, [MAKER, files[0]], {signal}).catch((error: Error & {stderr?: string}) => {
    throw new Error(`tiny_flux.py failed: ${error.stderr?.trim().split('\n').slice(-5).join(' | ') || error.message}`)
  })
}
