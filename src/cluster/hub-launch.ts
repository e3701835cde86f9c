/**
 * A launch by hub name (`hf.co/{user}/{repo}:{quant}`, weights/hub-names.ts): the repository's files are listed once,
 * the GGUF asked for is registered as a custom LLM model, and the launch goes on as a launch of that model, so that the
 * download, its progress, resume, verification and cache are those of every catalogue model. A name registered before
 * is launched without asking the hub again (a restart relaunches it offline); registering a new one needs what
 * registering any model needs.
 */
import type {Authority} from '../kernel/contracts.js'
import type {ModelRegistry} from '../kernel/registry.js'
import type {LaunchRequest} from '../protocol/launch.js'

import {ServiceError} from '../kernel/errors.js'
import {NO_AUTHORITY} from '../kernel/reach.js'
import {canonicalHubName, type HubModelName, hubFamily, looksLikeHubName, parseHubName, pickChoice, registrationName} from '../weights/hub-names.js'
import {createHub} from '../weights/hubs.js'

export interface HubLaunch {
  /** The launch of the registered model. */
  request: LaunchRequest
  /** The names the model answers to besides its uid: as asked (canonical), and with the quantization chosen. */
  aliases: string[]
}

export interface HubLaunchOptions {
  registry: ModelRegistry
  authority?: Authority
  /** Whether the caller holds `models:register`; an admin always does. */
  mayRegister?: boolean
  env?: NodeJS.ProcessEnv
  signal?: AbortSignal
}

const ENGINE_OF_FORMAT: Record<string, string> = {ggufv2: 'llama.cpp', pytorch: 'transformers'}

/** The launch a request becomes when its model_name is a hub name; nothing (at once) for any other name. */
export function resolveHubLaunch(request: LaunchRequest, options: HubLaunchOptions): Promise<HubLaunch> | undefined {
  return looksLikeHubName(request.model_name) ? hubLaunch(request, options) : undefined
}

async function hubLaunch(request: LaunchRequest, options: HubLaunchOptions): Promise<HubLaunch> {
  const authority = options.authority ?? NO_AUTHORITY
  const parsed = parseHubName(request.model_name)
  const name: HubModelName = parsed.quantization || !request.quantization ? parsed : {...parsed, quantization: request.quantization}
  const asked = canonicalHubName(name)
  // Found by the name it was registered for, in any case (`:q4_k_m` is `:Q4_K_M`), without asking the hub.
  const before = name.quantization ? options.registry.list('LLM').find(({family}) => family.hub_name === asked) : undefined
  const known = before && registered(options.registry, before.model_name)
  if (known) return launchOf(request, known, name, [asked])

  const hub = createHub(name.hub, options.env ?? process.env)
  const snapshot = await hub.snapshot(name.repo, hub.defaultRevision, options.signal).catch((error: unknown) => {
    if (error instanceof ServiceError && error.code === 'hub_not_found')
      throw new ServiceError(404, 'hub_not_found', `there is no repository ${name.repo} on ${name.hub} (${error.message}); check the name on the hub's site.`, 'model_name')
    throw error
  })
  const choice = pickChoice(snapshot, name)
  const modelName = registrationName({...name, quantization: choice.quantization})
  const aliases = [...new Set([asked, canonicalHubName({...name, quantization: choice.format === 'ggufv2' ? choice.quantization : undefined})])]
  const listed = registered(options.registry, modelName)
  if (listed) return launchOf(request, listed, name, aliases)
  if (!authority.admin && !options.mayRegister)
    throw new ServiceError(403, 'forbidden', `${request.model_name} is not registered yet, and launching it registers it, which needs the permission models:register; ask an administrator to launch it once or to add the permission.`, 'model_name')
  const family = hubFamily(name, snapshot, choice, modelName)
  try {
    await options.registry.register('LLM', family, {authority})
  } catch (error) {
    // Two launches of one new name at once: the second finds the first's registration.
    if (!registered(options.registry, modelName)) throw error
  }

  return launchOf(request, {format: choice.format, name: modelName, quantization: choice.quantization}, name, aliases)
}

interface Registered {
  name: string
  format: string
  quantization: string
}

function registered(registry: ModelRegistry, modelName: string): Registered | undefined {
  try {
    const spec = registry.get('LLM', modelName).family.model_specs?.[0]
    const quantization = spec?.model_src ? Object.values(spec.model_src)[0]?.quantizations?.[0] : undefined
    return spec && quantization ? {format: spec.model_format, name: modelName, quantization} : undefined
  } catch {
    return undefined
  }
}

function launchOf(request: LaunchRequest, model: Registered, name: HubModelName, aliases: string[]): HubLaunch {
  return {
    aliases: [...new Set([...aliases, canonicalHubName({...name, quantization: model.format === 'ggufv2' ? model.quantization : undefined})])],
    request: {
      ...request,
      download_hub: name.hub,
      model_engine: request.model_engine ?? ENGINE_OF_FORMAT[model.format],
      model_name: model.name,
      model_type: 'LLM',
      quantization: model.quantization,
    },
  }
}
