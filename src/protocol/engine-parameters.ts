/**
 * Everything in a launch request that is not a launch field is an engine parameter. Values arrive as JSON or,
 * from the CLI, as strings, so they are converted to the type the engine declares; an unknown name is a 400 that
 * lists the parameters the engine does take.
 */
import type {EngineDefinition, EngineParameter} from '../kernel/contracts.js'
import type {LaunchRequest} from './launch.js'

import {badRequest} from '../kernel/errors.js'
import * as s from '../kernel/schema.js'
import {LAUNCH_FIELDS} from './launch.js'

export function engineParameters(engine: EngineDefinition, request: LaunchRequest): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const [name, raw] of Object.entries(request)) {
    // Launch fields (Xinference's among them) reach the engine only when it declares them.
    if (raw === null || raw === undefined || (LAUNCH_FIELDS.has(name) && !engine.parameters[name])) continue
    const declared = engine.parameters[name]
    if (!declared) {
      const accepted = Object.keys(engine.parameters).sort().join(', ') || '(none)'
      throw badRequest(`unknown parameter "${name}" for engine ${engine.name}; it accepts: ${accepted}.`, name, 'unknown_parameter')
    }

    out[name] = coerce(name, declared, raw)
  }

  return out
}

function coerce(name: string, declared: EngineParameter, raw: unknown): unknown {
  let value = raw
  if (typeof raw === 'string' && declared.type !== 'string') {
    if (declared.type === 'boolean' && /^(true|false)$/i.test(raw)) value = raw.toLowerCase() === 'true'
    else if (declared.type !== 'boolean' && raw.trim() !== '' && Number.isFinite(Number(raw))) value = Number(raw)
  }

  const schema =
    declared.type === 'string'
      ? s.string({enum: declared.enum})
      : declared.type === 'boolean'
        ? s.boolean()
        : s.number({integer: declared.type === 'integer', maximum: declared.maximum, minimum: declared.minimum})
  return schema.parse(value, name)
}
