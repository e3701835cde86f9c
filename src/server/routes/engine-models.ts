/**
 * Which catalogue models an engine can serve, at Xinference's `GET /v1/models/vllm-supported` (`servicectl
 * vllm-models`): the LLM families, built-in and registered, with a spec in a format the vLLM engine runs, by the
 * chat and generate abilities they are launched for. Registered before the core routes, whose
 * `/v1/models/{model_uid}` would otherwise take the path for a model uid.
 */
import type {RouteDefinition} from '../../kernel/contracts.js'
import type {Kernel} from '../../kernel/kernel.js'
import type {ModelRegistry} from '../../kernel/registry.js'

import {flattenFamily} from '../../kernel/catalogue.js'
import {notFound} from '../../kernel/errors.js'
import {type VllmSupportedModels, vllmSupportedSchema} from '../../protocol/engine-models.js'

const VLLM = 'vllm'

export function engineModelRoutes({kernel, registry}: {kernel: Kernel; registry: ModelRegistry}): RouteDefinition[] {
  return [
    {
      async handler() {
        const engine = kernel.engine(VLLM)?.definition
        if (!engine) throw notFound(`the ${VLLM} engine is not installed; add its plugin with \`servicectl plugins install @service-toolkit/plugin-engine-vllm\`.`, 'not_found')
        const served = registry.list('LLM').filter(({family}) => flattenFamily(family).some((spec) => engine.formats.includes(spec.model_format)))
        const withAbility = (ability: string) => served.filter(({family}) => family.model_ability?.includes(ability)).map(({model_name}) => model_name)
        const body: VllmSupportedModels = {chat: withAbility('chat'), generate: withAbility('generate')}
        return {body, kind: 'json', status: 200}
      },
      method: 'GET',
      path: '/v1/models/vllm-supported',
      permission: 'models:list',
      response: vllmSupportedSchema.json,
      summary: 'The LLM families the vLLM engine can serve, by ability (chat, generate)',
      tag: 'registrations',
    },
  ]
}
