import type {ExternalEngine, FlexibleOperations, RegisterHook} from 'service-toolkit'

import {fileURLToPath} from 'node:url'

const LAUNCHER = fileURLToPath(new URL('../python/launcher.py', import.meta.url))
/** What the launcher's `--allowed-modules` says when SERVICE_ALLOWED_PYTHON_MODULES is unset: only admins could name the module. */
const ANY_MODULE = '*'

/**
 * Flexible models whose launcher is `python`: the model's own module runs in a virtual environment made from the
 * registration's `virtualenv` (its packages: scikit-learn, transformers, …), one program per model.
 */
const register: RegisterHook = async ({api}) => {
  const external: ExternalEngine<FlexibleOperations> = {
    command(request, {port, python}) {
      const args = ['-u', LAUNCHER, '--port', String(port), '--model-uri', request.modelPath, '--launcher-args', JSON.stringify(request.family.launcher_args ?? {})]
      // The registration's module was checked when it was registered; the launcher checks it again against this machine's own list.
      const allowed = api.policy.allowedPythonModules.length > 0 ? JSON.stringify(api.policy.allowedPythonModules) : ANY_MODULE
      return {args: [...args, '--allowed-modules', allowed, '--description', String(request.family.model_description ?? '')], file: python!.executable}
    },
    health: {path: '/health', timeoutMs: 10 * 60 * 1000},
    info: () => ({abilities: ['infer']}),
    operations: {
      async *infer(payload, {baseUrl, signal}) {
        const response = await fetch(`${baseUrl}/infer`, {body: JSON.stringify(payload), headers: {'content-type': 'application/json'}, method: 'POST', signal})
        const reply = (await response.json()) as {result?: unknown; error?: {message: string}}
        if (response.status === 400) throw api.errors.badRequest(`the model cannot take these arguments: ${reply.error?.message}`, 'args')
        if (!response.ok) throw api.errors.create(500, 'generation_failed', `the model failed: ${reply.error?.message ?? response.status}`)
        yield {result: reply.result, type: 'result'}
      },
    },
    stopGraceMs: 3000,
  }
  return {
    engines: [
      {
        external: external as ExternalEngine,
        formats: ['python'],
        modelTypes: ['flexible'],
        name: 'python',
        parameters: {},
        // The launcher needs nothing beyond the standard library; a model's packages come from its registration's virtualenv.
        python: {packages: ['pip']},
      },
    ],
  }
}

export default register
