// @ts-check
/**
 * Registers the __ENGINE_NAME__ engine with service-toolkit. This file runs inside the service when it starts
 * (and in `servicectl` commands); keep it cheap and free of heavy imports. The engine runs each launched model as
 * a program of its own, server.py here: the service starts it on a free port, waits for its health check, sends
 * it the model's requests over HTTP and stops it when the model is terminated.
 */
import {fileURLToPath, pathToFileURL} from 'node:url'

/** The kernel contract this plugin was written for; the service reports the plugin by name if it differs. */
const KERNEL_API_VERSION = 1

/** The model format this engine runs. Real engines use shared names such as `ggufv2` or `pytorch`. */
const FORMAT = '__SLUG__'

const SERVER = fileURLToPath(new URL('server.py', import.meta.url))

/** @type {import('service-toolkit').RegisterHook} */
const register = async ({api}) => {
  if (api.apiVersion !== KERNEL_API_VERSION)
    throw new Error(`__PLUGIN_NAME__ was written for kernel API ${KERNEL_API_VERSION}; this service has ${api.apiVersion}. Update the plugin.`)

  // The engine serves LLMs, so its operations are checked against the LLM type's: `chat` must take a ChatPayload
  // and yield GenerationEvents, and an operation the type lacks is an error.
  /** @type {import('service-toolkit').ExternalEngine<import('service-toolkit').LlmOperations>} */
  const external = {
    // The program for one model: it must listen on `port`. `env` already holds CUDA_VISIBLE_DEVICES when the
    // launch was given GPUs; return `env` to add variables. For vLLM this would be
    // {file: 'vllm', args: ['serve', request.modelPath, '--port', String(port), '--served-model-name', request.modelUid]}.
    // `api.external.commandLineFlags(request.parameters)` writes the launch's engine parameters as such a program's
    // flags (`max_model_len: 4096` → `--max-model-len 4096`), as the built-in vLLM, SGLang and MLX engines do.
    // A program that needs Python packages: declare them on the engine as `python: {packages: ['vllm']}`; the service
    // makes (once, and shares) a virtual environment with them and gives it here as `python`, whose
    // `python.executable` runs the program (README, "Python virtual environments").
    // A parameter naming a file on this machine (a template, a VAE): give the program
    // `await api.files.localPath(request.parameters.name, {param: 'name'})`, its real path once checked against
    // SERVICE_ALLOWED_MODEL_DIRS (a 400 naming the parameter otherwise), as the stable-diffusion.cpp engine does.
    command: (request, {port}) => ({
      file: 'python3',
      args: ['-u', SERVER, '--port', String(port), '--model', request.modelPath, '--delay-ms', String(request.parameters.delay_ms ?? 0)],
    }),
    // Ready once GET /health answers 2xx; a launch fails if that takes longer than timeoutMs.
    health: {path: '/health', timeoutMs: 30_000},
    // server.py speaks the OpenAI API, so the kernel's operations serve `chat` and `complete` through it.
    operations: api.external.openAICompatible(),
    info: () => ({abilities: ['chat', 'generate'], contextLength: 4096}),
    // SIGTERM, then this long to exit before SIGKILL.
    stopGraceMs: 5000,
  }

  return {
    engines: [
      {
        name: '__ENGINE_NAME__',
        modelTypes: ['LLM'],
        formats: [FORMAT],
        // Every launch parameter the engine accepts (`servicectl launch ... --delay_ms 50`); anything else is
        // refused with a 400 before the program starts. Values reach `command` as request.parameters.
        parameters: {
          delay_ms: {description: 'Pause before each word, in milliseconds (default 0).', maximum: 10_000, minimum: 0, type: 'integer'},
        },
        external,
        // Say why the engine cannot run on this machine (program not installed, wrong platform), or true.
        availability: () => true,
      },
    ],
    // A built-in model so that the engine can be tried at once:
    //   servicectl launch --model-name __SLUG__-demo --model-engine __ENGINE_NAME__
    //   servicectl chat --model-uid __SLUG__-demo
    // Its "weights" are demo-model.txt; real models name their files on a model hub (see the LLM catalogue).
    catalogue: [
      {
        modelType: 'LLM',
        families: [
          {
            model_name: '__SLUG__-demo',
            model_description: 'Demo model of the __ENGINE_NAME__ engine: answers with the last user message, word by word.',
            model_ability: ['chat', 'generate'],
            model_lang: ['en'],
            context_length: 4096,
            model_specs: [
              {
                model_format: FORMAT,
                model_size_in_billions: 0,
                quantization: 'none',
                model_uri: pathToFileURL(fileURLToPath(new URL('demo-model.txt', import.meta.url))).href,
              },
            ],
          },
        ],
      },
    ],
  }
}

export default register
