import type {ChatPayload, ExternalEngine, KernelApi, OpenAICompatibleOperations, RegisterHook} from 'service-toolkit'

import {fileURLToPath} from 'node:url'

import {checkImageLaunch, checkImageModel, OCR_ABILITIES, ocrOperations} from './ocr.js'
import {TRANSFORMERS_PACKAGES} from './packages.js'
import {embed, rank} from './retrieval.js'
import {generateRecipe, RECIPE_FILES} from './recipes.js'

/** The program each model runs: a small OpenAI-compatible server shipped with the plugin (python/host.py). */
const HOST = fileURLToPath(new URL('../python/host.py', import.meta.url))

/** Launch parameters, as the program's options. */
const OPTIONS: Record<string, string> = {device: '--device', dtype: '--dtype', max_new_tokens: '--max-new-tokens', n_threads: '--threads'}

/**
 * The host's chat, which refuses a tool choice that asks for a call: nothing in the host makes the model write one
 * (it has no structured output), and a model asked to may still answer in text.
 */
function chatWithTools(chat: OpenAICompatibleOperations['chat'], errors: KernelApi['errors']): OpenAICompatibleOperations['chat'] {
  return async function* (payload: ChatPayload, endpoint) {
    const choice = payload.toolChoice
    if (choice === 'required' || typeof choice === 'object') {
      const asked = choice === 'required' ? '"required"' : `the function "${choice.name}"`
      throw errors.badRequest(
        `\`tool_choice\` ${asked} asks for a call the model must make, which the transformers engine cannot enforce; send "auto" (the model decides) or "none", or launch the model on llama.cpp, vLLM or SGLang, which honour it.`,
        'tool_choice',
      )
    }

    yield* chat(payload, endpoint)
  }
}

/**
 * The engine runs each model as python/host.py in the engine's virtual environment (the kernel makes it from
 * `python.packages` and the registration's `virtualenv`), routes chat and completions to it as to any
 * OpenAI-compatible server (the service splits tool calls out of its text, see src/kernel/tool-calls.ts), and
 * embeddings, rerank and OCR (image models that read text, see ocr.ts) to its own routes.
 */
const register: RegisterHook = async ({api}) => {
  const openAI = api.external.openAICompatible()
  const external: ExternalEngine = {
    async command(request, {port, python}) {
      if (!python) throw api.errors.badRequest('the transformers engine runs in a Python environment, and the service gave none.', 'model_engine')
      if (request.modelType === 'image') await checkImageModel(request, api.errors)
      const args = ['-u', HOST, '--port', String(port), '--model', request.modelPath, '--model-uid', request.modelUid, '--model-type', request.modelType]
      for (const [parameter, option] of Object.entries(OPTIONS)) if (request.parameters[parameter] !== undefined) args.push(option, String(request.parameters[parameter]))
      if (request.parameters.trust_remote_code === true) args.push('--trust-remote-code')
      // The weights are local files: the program never asks the hub, so a launch works offline and stays private.
      return {args, env: {HF_HUB_OFFLINE: '1', TOKENIZERS_PARALLELISM: 'false'}, file: python.executable}
    },
    // Importing torch and loading a large model from a slow disk takes minutes.
    health: {intervalMs: 250, path: '/health', timeoutMs: 600_000},
    info: (request) => ({
      ...(typeof request.family.context_length === 'number' ? {contextLength: request.family.context_length} : {}),
      ...(request.modelType === 'image' ? {abilities: OCR_ABILITIES} : {}),
    }),
    operations: {...openAI, chat: chatWithTools(openAI.chat, api.errors), embed, rank, ...ocrOperations(api.external.jsonLines('transformers'))},
    stopGraceMs: 5000,
  }
  return {
    engines: [
      {
        checkLaunch: (request) => (request.modelType === 'image' ? checkImageLaunch(request, api.errors) : undefined),
        external,
        formats: ['pytorch'],
        modelTypes: ['LLM', 'embedding', 'rerank', 'image'],
        name: 'transformers',
        parameters: {
          device: {description: 'Where the model runs: auto (a GPU when torch sees one, default), cpu or cuda.', enum: ['auto', 'cpu', 'cuda'], type: 'string'},
          dtype: {description: "The weights' type in memory: auto (as saved, default), float32, float16 or bfloat16.", enum: ['auto', 'float32', 'float16', 'bfloat16'], type: 'string'},
          max_new_tokens: {description: 'Tokens a reply may have when its request gives no max_tokens (default 512).', minimum: 1, type: 'integer'},
          n_threads: {description: "CPU threads torch computes with (default: torch's own choice).", minimum: 1, type: 'integer'},
          reasoning_format: {
            description: "How an LLM's output carries its reasoning, split into reasoning_content: think (<think> tags, or the family's reasoning_start_tag and reasoning_end_tag), harmony (gpt-oss's channels) or none (default: the family's, by its reasoning ability).",
            enum: ['think', 'harmony', 'none'],
            type: 'string',
          },
          tool_call_format: {
            description:
              "How an LLM writes tool calls, split into tool_calls: hermes (Qwen's <tool_call>), llama3_json (Llama 3's JSON), mistral ([TOOL_CALLS]) or none (default: the family's tool_parser, else the markers its chat template shows).",
            enum: ['hermes', 'llama3_json', 'mistral', 'none'],
            type: 'string',
          },
          trust_remote_code: {description: "Run the model repository's own Python code (models transformers does not know); only for repositories you trust.", reaches: 'repository-code', type: 'boolean'},
        },
        python: {packages: TRANSFORMERS_PACKAGES},
      },
    ],
    weightsGenerators: [{format: 'pytorch', generate: generateRecipe, python: {packages: TRANSFORMERS_PACKAGES}, recipes: Object.keys(RECIPE_FILES)}],
  }
}

export default register
