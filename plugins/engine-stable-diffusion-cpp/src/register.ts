import type {LoadRequest, RegisterHook} from 'service-toolkit'

import {fileURLToPath} from 'node:url'

import {abilitiesOf} from './abilities.js'
import {stableDiffusionOperations} from './operations.js'
import {generateTinyFlux, TINY_FLUX} from './tiny-flux.js'

const SERVER = fileURLToPath(new URL('../python/server.py', import.meta.url))

/**
 * stable-diffusion-cpp-python is published as a source distribution only: the environment builds sd.cpp and ggml
 * with CMake once (minutes), then every model reuses it. gguf reads a file's tensor names (what it holds, what it
 * needs beside it) and writes the tiny model.
 */
const PACKAGES = ['stable-diffusion-cpp-python==0.4.7', 'gguf==0.19.0', 'pillow']

/**
 * The files sd.cpp reads beside a diffusion-only GGUF, as launch parameters naming them; a spec's companion files
 * (the catalogue's FLUX.1 and SD 3.5 GGUF specs list them) fill the ones a launch does not name with downloaded files.
 */
const COMPANIONS = {
  clip_g: 'the CLIP-G text encoder (SD 3.5), e.g. clip_g.safetensors',
  clip_l: 'the CLIP-L text encoder (FLUX.1, SD 3.5), e.g. clip_l.safetensors',
  t5xxl: 'the T5-XXL text encoder (FLUX.1, SD 3.5), e.g. t5xxl_fp16.safetensors',
  vae: "the VAE (FLUX.1's ae.safetensors, SD 3.5's)",
}

/** What each model launching or running can do, found when its command is made and told once it is ready. */
const abilities = new WeakMap<LoadRequest, string[]>()

/**
 * Each model runs `python/server.py` in a virtual environment with stable-diffusion-cpp-python: a GGUF file, with the
 * VAE and text encoders it lacks given as files on this machine or downloaded as its companions (the program refuses to
 * start, naming them, when one it needs is missing).
 */
/**
 * The program's own refusal of a GGUF file that holds only the diffusion model (server.py's Model): the one line of its
 * output the launch's caller gets back, as it names the launch parameters that fix it; the rest stays in the log.
 */
const MISSING_COMPANIONS = /^[^\n]{1,200}'s GGUF file holds only the diffusion model; stable-diffusion\.cpp also needs [^\n]{1,400}$/m

export function missingCompanions(output: string): string | undefined {
  return MISSING_COMPANIONS.exec(output)?.[0].replace(/\.$/, '')
}

const register: RegisterHook = async ({api}) => {
  /** The parameters with the real path of each companion file they name. */
  const withFiles = async (given: Record<string, unknown>) => {
    const parameters = {...given}
    for (const name of Object.keys(COMPANIONS)) if (parameters[name] !== undefined) parameters[name] = await api.files.localPath(parameters[name], {param: name})
    return parameters
  }

  return {
    catalogue: [{families: [TINY_FLUX].map(api.media.normalizeFamily), modelType: 'image'}],
    engines: [
      {
        // Before the weights and the other companions download: a file the launch names and may not read fails it at once.
        checkLaunch: async (request) => void (await withFiles(request.parameters)),
        external: {
          async command(request, {port, python}) {
            const {family, modelName, modelPath, modelType} = request
            const parameters = await withFiles(request.parameters)

            // A family that names its abilities is held to them; the file says which of them sd.cpp can do.
            const declared = family.model_ability
            const found = (await abilitiesOf(modelPath, parameters.vae)).filter((ability) => !declared || declared.includes(ability))
            abilities.set(request, found)
            const load = JSON.stringify({abilities: found, family, modelName, modelPath, modelType, parameters})
            return {args: ['-u', SERVER, '--port', String(port), '--request', load], file: python!.executable}
          },
          // A 12B-parameter FLUX file and its T5 take minutes to read from a slow disk.
          health: {path: '/health', timeoutMs: 15 * 60 * 1000},
          info: (request) => ({abilities: abilities.get(request)}),
          operations: stableDiffusionOperations(api.external.jsonLines('stable-diffusion.cpp')),
          startFailure: missingCompanions,
          stopGraceMs: 5000,
        },
        estimatorModule: fileURLToPath(new URL('estimate.js', import.meta.url)),
        formats: ['ggufv2'],
        modelTypes: ['image'],
        name: 'stable-diffusion.cpp',
        parameters: {
          ...Object.fromEntries(Object.entries(COMPANIONS).map(([name, what]) => [name, {description: `Absolute path of ${what}, for a GGUF file holding only the diffusion model (overrides the file its spec downloads as a companion).`, reaches: 'file' as const, type: 'string' as const}])),
          cpu_threads: {description: 'Threads sd.cpp computes with (default: one per core).', minimum: 1, type: 'integer'},
        },
        python: {packages: PACKAGES},
      },
    ],
    weightsGenerators: [{format: 'ggufv2', generate: generateTinyFlux, python: {packages: PACKAGES}, recipes: [TINY_FLUX.model_name]}],
  }
}

export default register
