/** Launch defaults shared by the model host and the memory estimator, so an estimate matches a launch. */
import {requestError} from './errors.js'

const DEFAULT_CONTEXT = 4096
const DEFAULT_PARALLEL = 4
/** An embedding or ranking context evaluates one input at a time; more of them cost memory, so one by default. */
const DEFAULT_RETRIEVAL_PARALLEL = 1

/**
 * The context each sequence gets: `n_ctx` as asked, else `fallback`, never more than the model was trained on. An
 * `n_ctx` past that is refused rather than quietly shortened, so a launch never reports a context it does not have.
 */
function contextLengthOf(requested: number | undefined, fallback: number, trainContextSize: number | undefined): number {
  if (trainContextSize === undefined) return requested ?? fallback
  if (requested !== undefined && requested > trainContextSize)
    throw requestError(`\`n_ctx\` ${requested} is longer than the ${trainContextSize} tokens this model was trained on; use an n_ctx of ${trainContextSize} or less.`, 'n_ctx')
  return Math.min(requested ?? fallback, trainContextSize)
}

/**
 * The context and parallel sequences a launch of this model type gets. Embedding and rerank models read whole
 * inputs, so they default to their trained context and to one sequence; LLMs to 4096 tokens and 4 sequences.
 */
export function launchShape(modelType: string, parameters: Record<string, unknown>, trainContextSize: number | undefined) {
  const retrieval = modelType === 'embedding' || modelType === 'rerank'
  return {
    contextSize: contextLengthOf(parameters.n_ctx as number | undefined, retrieval ? (trainContextSize ?? DEFAULT_CONTEXT) : DEFAULT_CONTEXT, trainContextSize),
    parallel: (parameters.n_parallel as number | undefined) ?? (retrieval ? DEFAULT_RETRIEVAL_PARALLEL : DEFAULT_PARALLEL),
    retrieval,
  }
}

/**
 * llama.cpp evaluates at most the whole context (every sequence's) in one batch; a larger `n_batch` would only make
 * node-llama-cpp reserve memory for it and fail the launch as if the machine were short of RAM.
 */
export function checkBatchSize(requested: number | undefined, contextTokens: number): void {
  if (requested !== undefined && requested > contextTokens)
    throw requestError(`\`n_batch\` ${requested} is more than the ${contextTokens} tokens of the whole context (n_ctx × n_parallel); use an n_batch of ${contextTokens} or less.`, 'n_batch')
}
