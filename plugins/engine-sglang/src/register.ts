import type {ExternalEngine, LlmOperations, LoadRequest, RegisterHook, ToolCallFormat} from 'service-toolkit'

import {existsSync} from 'node:fs'

import {SGLANG_PARAMETERS, sglangCommand, sglangToolCallParser} from './server-command.js'

/**
 * SGLang's package on PyPI is built for CUDA (torch with CUDA, flashinfer, its CUDA kernels), so it needs Linux with an
 * NVIDIA GPU; its CPU backend exists only as a build from source.
 */
export function sglangAvailability(platform: string = process.platform, nvidiaDriver: boolean = existsSync('/proc/driver/nvidia/version'), python?: string | null): true | string {
  if (platform === 'linux' && nvidiaDriver) {
    // Its PyPI package's requires_python is >=3.11.
    const minor = python?.startsWith('3.') ? Number(python.split('.')[1]) : undefined
    if (minor === undefined || minor >= 11) return true
    return `SGLang needs Python 3.11 or later, and the worker's Python is ${python}; point SERVICE_PYTHON at a newer one, or use vllm or llama.cpp.`
  }

  const here = platform === 'linux' ? 'this Linux machine has no NVIDIA GPU (no driver at /proc/driver/nvidia)' : `this machine is ${platform}`
  return `SGLang needs Linux with an NVIDIA GPU: its PyPI package is built for CUDA, and ${here}; use vllm (its CPU build runs here on Linux), llama.cpp (GGUF, any machine) or transformers instead.`
}

/** Tool calls need SGLang's parser of the model's format, so a model has the tools ability only when launched with one. */
const info = (request: LoadRequest, format: ToolCallFormat | undefined) => ({
  abilities: (request.family.model_ability ?? ['chat', 'generate']).filter((ability) => ability !== 'tools' || sglangToolCallParser(format, request.parameters) !== undefined),
  contextLength: (request.parameters.context_length as number | undefined) ?? request.family.context_length,
})

/**
 * The engine is data: the kernel makes a virtual environment with SGLang, starts its server in it on a free port and
 * proxies chat and completions to its OpenAI API. The program's own options are the engine's parameters.
 */
const register: RegisterHook = async ({api}) => {
  /**
   * The parameters with the chat template file's real path. SGLang takes a built-in template's name (chatml) as well as a
   * file's path, relative ones from the working folder it inherits from the service: a value that names a file there is
   * a path too, and must be an absolute one.
   */
  const withFiles = async (parameters: Record<string, unknown>) => {
    const template = parameters.chat_template
    const isPath = typeof template === 'string' && (template.includes('/') || existsSync(template))
    return isPath ? {...parameters, chat_template: await api.files.localPath(template, {param: 'chat_template'})} : parameters
  }

  const external: ExternalEngine<LlmOperations> = {
    // Without an environment from the kernel, the machine's own Python runs it.
    async command(request, context) {
      const parameters = await withFiles(request.parameters)
      return sglangCommand({...request, parameters, toolCallFormat: api.external.toolCallFormat(request)}, {port: context.port, python: context.python?.executable ?? 'python3'}, api.external.commandLineFlags)
    },
    // A large model from a slow disk, or SGLang capturing its CUDA graphs, takes minutes.
    health: {path: '/health', timeoutMs: 30 * 60_000},
    info: (request) => info(request, api.external.toolCallFormat(request)),
    operations: api.external.openAICompatible(),
    stopGraceMs: 30_000,
  }
  return {
    engines: [
      {
        availability: (worker) => (worker ? sglangAvailability(worker.platform ?? process.platform, worker.gpus.length > 0, worker.python) : sglangAvailability()),
        // Before the weights download: a file the launch may not read fails it at once.
        checkLaunch: async (request) => void (await withFiles(request.parameters)),
        external,
        formats: ['pytorch', 'awq', 'gptq', 'fp8'],
        modelTypes: ['LLM'],
        name: 'sglang',
        parameters: SGLANG_PARAMETERS,
        python: {packages: ['sglang']},
      },
    ],
  }
}

export default register
