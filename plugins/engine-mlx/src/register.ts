import {existsSync} from 'node:fs'

import type {ExternalEngine, LlmOperations, RegisterHook} from 'service-toolkit'

import {MLX_PARAMETERS, MLX_SERVED_MODEL, mlxAvailability, mlxCommand} from './server-command.js'

/**
 * The engine is data: on an Apple silicon Mac the kernel makes a virtual environment with mlx-lm, starts
 * `mlx_lm.server` in it on a free port and proxies chat and completions to its OpenAI API; anywhere else the engine
 * says why it cannot run.
 */
const register: RegisterHook = async ({api}) => {
  /**
   * The parameters with the draft model folder's real path. mlx-lm takes a hub repository (org/name, from its cache) as
   * well as a folder's path, relative ones from the working folder it inherits from the service: a value that names
   * something there is a path too, and must be an absolute one.
   */
  const withFiles = async (parameters: Record<string, unknown>) => {
    const draft = parameters.draft_model
    const isPath = typeof draft === 'string' && (/^[/.~]/.test(draft) || existsSync(draft))
    return isPath ? {...parameters, draft_model: await api.files.localPath(draft, {kind: 'folder', param: 'draft_model'})} : parameters
  }

  const external: ExternalEngine<LlmOperations> = {
    // Without an environment from the kernel, the machine's own Python runs it.
    async command(request, context) {
      const parameters = await withFiles(request.parameters)
      return mlxCommand({...request, parameters}, {port: context.port, python: context.python?.executable ?? 'python3'}, api.external.commandLineFlags)
    },
    health: {path: '/health', timeoutMs: 10 * 60_000},
    operations: api.external.openAICompatible({model: MLX_SERVED_MODEL}),
    stopGraceMs: 10_000,
  }
  return {
    engines: [
      {
        availability: (worker) => (worker ? mlxAvailability(worker.platform ?? process.platform, worker.arch ?? process.arch) : mlxAvailability()),
        // Before the weights download: a folder the launch may not read fails it at once.
        checkLaunch: async (request) => void (await withFiles(request.parameters)),
        external,
        formats: ['mlx'],
        modelTypes: ['LLM'],
        name: 'MLX',
        parameters: MLX_PARAMETERS,
        python: {packages: ['mlx-lm']},
      },
    ],
  }
}

export default register
