/**
 * A request's query checked against the parameters its route declares (`RouteDefinition.query`) before the handler
 * runs, so that what /openapi.json says a parameter takes is what the service accepts: a required one is there, a
 * boolean is true, false, 1 or 0 (in any case: Python's clients send `False`), a number is a number, an enum one of its values. Parameters a route does not
 * declare are left alone, as clients add their own (a cache buster).
 */
import type {QueryParameter} from '../kernel/contracts.js'

import {badRequest} from '../kernel/errors.js'
import {booleanText} from '../kernel/schema.js'

export function checkQuery(declared: Record<string, QueryParameter>, query: Record<string, string | string[] | undefined>): void {
  for (const [name, {required, schema}] of Object.entries(declared)) {
    const value = query[name]
    // An empty text is no text (`?model_name=` lists every model); an empty yes/no is still a wrong one.
    if (value === undefined || (value === '' && schema.type === 'string')) {
      if (required) throw badRequest(`query parameter \`${name}\` is required.`, name)
      continue
    }

    const refuse = (expected: string) => badRequest(`query parameter \`${name}\` must be ${expected} (got ${JSON.stringify(value)}).`, name)
    if (Array.isArray(value)) throw refuse('given once')
    if (schema.type === 'boolean' && booleanText(value) === undefined) throw refuse('true or false')
    if (schema.type === 'integer' && !/^-?\d+$/.test(value)) throw refuse('an integer')
    if (schema.type === 'number' && (value.trim() === '' || !Number.isFinite(Number(value)))) throw refuse('a number')
    if (Array.isArray(schema.enum) && !schema.enum.includes(value)) throw refuse(`one of ${schema.enum.join(', ')}`)
  }
}
