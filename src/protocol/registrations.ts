// Wire types of the registration and engine routes; see launch.ts for why they live in src/protocol/.
import * as s from '../kernel/schema.js'

/** A model family as Xinference writes it (model_name, model_specs, …), with whether it comes with the service. */
export const registeredFamilySchema = s.object(
  {is_builtin: s.boolean({description: 'Whether it comes with the service (catalogue) rather than from a registration.'}), model_name: s.string()},
  {description: 'The whole family: model_name, model_specs and the fields of its type.', title: 'RegisteredFamily', unknownKeys: 'keep'},
)

/** `GET /v1/model_registrations/{model_type}`: names only, or whole families with `?detailed=true`. */
export const registrationListSchema = s.array(registeredFamilySchema, {description: 'Each family as {model_name, is_builtin}, or whole with ?detailed=true.'})

/** `GET /v1/engines/{model_name}`: per engine, the formats, sizes and quantizations it runs; or why it cannot run here. */
export const engineMatrixSchema = s.record(
  s.union(
    [
      s.array(
        s.object(
          {
            available: s.boolean({description: 'Whether a worker there is can run these specs with the engine (device, memory, platform, what the engine takes).'}),
            model_format: s.string(),
            model_size_in_billions: s.unknown(),
            quantizations: s.array(s.string()),
            reason: s.optional(s.string({description: 'Why no worker can, when not available; a launch of these specs is refused with it.'})),
          },
          {title: 'EngineSpec', unknownKeys: 'keep'},
        ),
      ),
      s.string({description: 'Why the engine cannot run on this machine.'}),
    ],
    'the specs the engine runs, or why it cannot run here',
  ),
  {description: 'Per engine, the specs it runs, or why it cannot run here.'},
)

/** One group of a model's specs under an engine in `GET /v1/engines/{model_name}`: a format and size, its quantizations. */
export interface EngineSpecGroup {
  model_name?: string
  model_format: string
  model_size_in_billions: string
  quantizations: string[]
  model_hubs?: string[]
  available: boolean
  reason?: string
}

/** `GET /v1/engines/{model_name}`: per engine, its spec groups, or why it cannot run here at all. */
export type EngineMatrix = Record<string, EngineSpecGroup[] | string>
