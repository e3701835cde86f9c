import type {AudioOperations, ExternalEngine, RegisterHook} from 'service-toolkit'

import {dirname} from 'node:path'
import {fileURLToPath} from 'node:url'

import {generateRecipe, RECIPE_NAMES} from './tiny-random-vits.js'

const SERVER = fileURLToPath(new URL('../python/vits_server.py', import.meta.url))

/**
 * VITS voices (transformers' VitsModel: Meta's MMS-TTS in 1100 languages, VITS) in a Python program per model, in a
 * virtual environment with PyTorch and transformers that the kernel makes on first launch.
 */
const register: RegisterHook = async ({api}) => {
  const external: ExternalEngine<Pick<AudioOperations, 'speak'>> = {
    command(request, {port, python}) {
      const voices = Array.isArray(request.family.voices) ? request.family.voices : ['default']
      const threads = request.parameters.n_threads === undefined ? [] : ['--threads', String(request.parameters.n_threads)]
      return {args: ['-u', SERVER, '--model', dirname(request.modelPath), '--port', String(port), '--voices', JSON.stringify(voices), ...threads], file: python!.executable}
    },
    health: {intervalMs: 250, path: '/health', timeoutMs: 300_000},
    info: () => ({abilities: ['text2audio']}),
    // The program streams raw PCM, one sentence at a time; each chunk that arrives goes on at once.
    operations: api.external.pcmSpeech(),
    stopGraceMs: 3000,
  }
  return {
    engines: [
      {
        external: external as ExternalEngine,
        formats: ['pytorch'],
        modelTypes: ['audio'],
        name: 'vits',
        parameters: {n_threads: {description: 'CPU threads PyTorch computes with (default: every core).', minimum: 1, type: 'integer'}},
        python: {packages: ['torch==2.13.0', 'transformers>=4.45']},
      },
    ],
    weightsGenerators: [{format: 'pytorch', generate: generateRecipe, recipes: RECIPE_NAMES}],
  }
}

export default register
