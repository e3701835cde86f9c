import type {AudioOperations, ExternalEngine, ModelFamily, RegisterHook} from 'service-toolkit'

import {readFile} from 'node:fs/promises'
import {fileURLToPath} from 'node:url'

import {generateRecipe, MAKER_PACKAGES, RECIPE_NAMES} from './tiny-random-piper.js'

const SERVER = fileURLToPath(new URL('../python/piper_server.py', import.meta.url))

/** piper-tts 1.8 is one manylinux abi3 wheel with espeak-ng and its data inside; it brings ONNX Runtime. */
const PIPER_PACKAGES = ['piper-tts==1.8.0']

/**
 * Piper's voices (rhasspy/piper-voices: VITS exported to ONNX, in many languages, some with hundreds of speakers) in a
 * Python program per voice that runs them with piper-tts on ONNX Runtime, in a virtual environment the kernel makes
 * on first launch. `voice` picks the speaker by its name in the voice's .onnx.json; OpenAI's voice names map onto
 * the speakers (see python/piper_server.py).
 */
const register: RegisterHook = async ({api}) => {
  const families = JSON.parse(await readFile(new URL('../catalogue/piper-voices.json', import.meta.url), 'utf8')) as ModelFamily[]
  const external: ExternalEngine<Pick<AudioOperations, 'speak'>> = {
    command(request, {port, python}) {
      const threads = request.parameters.n_threads === undefined ? [] : ['--threads', String(request.parameters.n_threads)]
      return {args: ['-u', SERVER, '--model', request.modelPath, '--port', String(port), ...threads], file: python!.executable}
    },
    health: {intervalMs: 250, path: '/health', timeoutMs: 300_000},
    info: () => ({abilities: ['text2audio']}),
    // The program streams raw PCM, one sentence at a time; each chunk that arrives goes on at once.
    operations: api.external.pcmSpeech(),
    stopGraceMs: 3000,
  }
  return {
    catalogue: [{families, modelType: 'audio'}],
    engines: [
      {
        external: external as ExternalEngine,
        formats: ['onnx'],
        modelTypes: ['audio'],
        name: 'piper',
        parameters: {n_threads: {description: 'CPU threads ONNX Runtime computes with (default: its own choice, every core).', minimum: 1, type: 'integer'}},
        python: {packages: PIPER_PACKAGES},
      },
    ],
    weightsGenerators: [{format: 'onnx', generate: generateRecipe, python: {packages: [...PIPER_PACKAGES, ...MAKER_PACKAGES]}, recipes: RECIPE_NAMES}],
  }
}

export default register
