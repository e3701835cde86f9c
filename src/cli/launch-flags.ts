/**
 * The CLI's launch flags are the protocol's launch fields in kebab case (`--model-name` is `model_name`). They
 * stay oclif flags, for help and parsing, but their names and value types are checked against the protocol's
 * `LaunchFields` at compile time: a flag that names no field, or whose value the field does not take, fails
 * the build.
 */
import type {Interfaces} from '@oclif/core'

import type {LaunchFields} from '../protocol/launch.js'

type Kebab<S extends string> = S extends `${infer Head}_${infer Tail}` ? `${Head}-${Kebab<Tail>}` : S
type Snake<S extends string> = S extends `${infer Head}-${infer Tail}` ? `${Head}_${Snake<Tail>}` : S

/** A launch flag's name: a launch field's, in kebab case. */
export type LaunchFlagName = Kebab<keyof LaunchFields & string>

type FlagValue<D> = D extends Interfaces.OptionFlag<infer T, any> ? T : D extends Interfaces.BooleanFlag<infer T> ? T : never

/** Each flag as declared, or never where its name or value type does not match its launch field. */
type MatchingFlags<F> = {[K in keyof F]: K extends LaunchFlagName ? (FlagValue<F[K]> extends LaunchFields[Snake<K>] ? F[K] : never) : never}

/** The launch fields the parsed flags give, named as the protocol names them. */
export type LaunchFieldsOf<F> = {[K in keyof F & string as Snake<K>]: FlagValue<F[K]>}

/** The launch fields of a command's parsed flags: the values of the declared launch flags, under their field names. */
export function launchFieldsFromFlags<F extends MatchingFlags<F>>(declared: F, parsed: Record<string, unknown>): LaunchFieldsOf<F> {
  return Object.fromEntries(Object.keys(declared).map((name) => [name.replaceAll('-', '_'), parsed[name]])) as LaunchFieldsOf<F>
}
