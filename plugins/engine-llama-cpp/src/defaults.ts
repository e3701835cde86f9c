/** Launch defaults shared by the model host and the memory estimator, so an estimate matches a launch. */
import {requestError} from './errors.js'

export const DEFAULT_CONTEXT = 4096
export const DEFAULT_PARALLEL = 4

/**
 * The context each sequence gets: `n_ctx` as asked, else `fallback`, never more than the model was trained on. An
 * `n_ctx` past that is refused rather than quietly shortened, so a launch never reports a context it does not have.
 */
export function contextLengthOf(requested: number | undefined, fallback: number, trainContextSize: number | undefined): number {
  if (trainContextSize === undefined) return requested ?? fallback
  if (requested !== undefined && requested > trainContextSize)
    throw requestError(`\`n_ctx\` ${requested} is longer than the ${trainContextSize} tokens this model was trained on; use an n_ctx of ${trainContextSize} or less.`, 'n_ctx')
  return Math.min(requested ?? fallback, trainContextSize)
}
