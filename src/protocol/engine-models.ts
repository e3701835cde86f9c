// The wire shape of `GET /v1/models/vllm-supported`; see launch.ts for why wire types live in src/protocol/.
import * as s from '../kernel/schema.js'

/** Xinference's answer: the LLM families vLLM can serve, by what they are launched for. */
export const vllmSupportedSchema = s.object(
  {
    chat: s.array(s.string(), {description: 'Families with the chat ability that have a spec in a format vLLM runs.'}),
    generate: s.array(s.string(), {description: 'Families with the generate ability that have a spec in a format vLLM runs.'}),
  },
  {title: 'VllmSupportedModels'},
)

export type VllmSupportedModels = s.Infer<typeof vllmSupportedSchema>
