import {existsSync} from 'node:fs'

import type {ExternalEngine, LlmOperations, RegisterHook} from 'service-toolkit'

import {MLX_PARAMETERS, MLX_SERVED_MODEL, mlxAvailability, mlxCommand} from './server-command.js'

/**
 * The engine is data: on an Apple silicon Mac the kernel makes a virtual environment with mlx-lm, starts
 * `mlx_lm.server` in it on a free port and proxies chat and completions to its OpenAI API; anywhere else the engine
 * says why it cannot run.
 */
const register: RegisterHook = async ({api}) => {
  const external: ExternalEngine<LlmOperations> = {
    // Without an environment from the kernel, the machine's own Python runs it.
    async command(request, context) {
      const draft = request.parameters.draft_model
      // mlx-lm takes a hub repository (org/name, from its cache) as well as a folder's path, relative ones from the working
      // folder it inherits from the service: a value that names something there is a path too, and must be an absolute one.
      const isPath = typeof draft === 'string' && (/^[/.~]/.test(draft) || existsSync(draft))
      const parameters = isPath ? {...request.parameters, draft_model: await api.files.localPath(draft, {kind: 'folder', param: 'draft_model'})} : request.parameters
      return mlxCommand({...request, parameters}, {port: context.port, python: context.python?.executable ?? 'python3'}, api.external.commandLineFlags)
    },
    health: {path: '/health', timeoutMs: 10 * 60_000},
    operations: api.external.openAICompatible({model: MLX_SERVED_MODEL}),
    stopGraceMs: 10_000,
  }
  return {
    engines: [
      {
        availability: () => mlxAvailability(),
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
