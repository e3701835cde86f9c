import type {Config, Hook, Interfaces} from '@oclif/core'

import type {Contribution, KernelApi, Logger} from './contracts.js'

import {createKernelApi, Kernel, type KernelApiSettings} from './kernel.js'

/** The one custom oclif event every toolkit plugin implements. */
export const REGISTER_EVENT = 'service:register'

export interface ServiceHooks extends Interfaces.Hooks {
  [REGISTER_EVENT]: {options: {api: KernelApi}; return: Contribution}
}

/** The type a plugin's hook module default-exports: `export default (async ({api}) => ({…})) satisfies RegisterHook`. */
export type RegisterHook = Hook<typeof REGISTER_EVENT, ServiceHooks>

export interface PluginContribution {
  plugin: string
  contribution: Contribution
}

export interface PluginFailure {
  plugin: string
  message: string
}

const HOOK_TIMEOUT_MS = 10_000

/**
 * Fires `service:register` on every loaded plugin (core, user-installed and linked). oclif runs the plugins
 * in parallel and reports them in completion order, so the results are sorted by plugin name to make the
 * kernel's contents deterministic. A plugin that throws or times out is reported by name and left out.
 */
export async function collectContributions(
  config: Config,
  api: KernelApi,
): Promise<{contributions: PluginContribution[]; failures: PluginFailure[]}> {
  const result = await config.runHook<typeof REGISTER_EVENT, ServiceHooks>(REGISTER_EVENT, {api}, HOOK_TIMEOUT_MS, true)
  const failures = result.failures.map((failure) => ({message: failure.error.message, plugin: failure.plugin.name}))
  const contributions: PluginContribution[] = []
  for (const success of result.successes) {
    if (typeof success.result !== 'object' || success.result === null) {
      failures.push({message: 'its service:register hook returned no contribution object', plugin: success.plugin.name})
      continue
    }

    contributions.push({contribution: success.result, plugin: success.plugin.name})
  }

  const byName = (a: {plugin: string}, b: {plugin: string}) => a.plugin.localeCompare(b.plugin)
  return {contributions: contributions.sort(byName), failures: failures.sort(byName)}
}

/** Plugins and engines, as every process that runs, describes or builds models loads them. */
export async function loadKernel(config: Config, log: Logger, settings: KernelApiSettings = {}): Promise<Kernel> {
  const api = createKernelApi(config.version, log, settings)
  const {contributions, failures} = await collectContributions(config, api)
  const kernel = Kernel.fromContributions(api, contributions, failures)
  log.info(`plugins: ${kernel.plugins.join(', ') || '(none)'}; engines: ${[...kernel.engines.values()].map((e) => e.definition.name).join(', ') || '(none)'}`)
  return kernel
}
