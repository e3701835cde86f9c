import type {Client} from '../client/client.js'
import type {PluginsReply} from '../protocol/service-info.js'

/**
 * `type` as the service's plugins spell it, with their description: the service takes a model type in any case
 * (`llm`), but its tables (the registration columns) and what a person reads name it as its plugin does (`LLM`).
 */
export async function canonicalModelType(client: Client, type: string): Promise<{name: string; plugins: PluginsReply}> {
  const plugins = await client.request<PluginsReply>('GET', '/v1/cluster/plugins')
  return {name: plugins.model_types.find(({name}) => name.toLowerCase() === type.toLowerCase())?.name ?? type, plugins}
}
