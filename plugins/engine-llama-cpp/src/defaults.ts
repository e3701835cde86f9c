/** Launch defaults shared by the model host and the memory estimator, so an estimate matches a launch. */
const DEFAULT_CONTEXT = 4096
const DEFAULT_PARALLEL = 4
/** An embedding or ranking context evaluates one input at a time; more of them cost memory, so one by default. */
const DEFAULT_RETRIEVAL_PARALLEL = 1

export interface LaunchShape {
  /** Tokens of context per sequence: what was asked (`n_ctx`) or the default, at most the model's trained context. */
  contextSize: number
  /** `n_ctx` as asked, when it was. */
  requestedContextSize?: number
  parallel: number
}

/**
 * The context and parallel sequences a launch of this model type gets. Embedding and rerank models read whole
 * inputs, so they default to their trained context and to one sequence; LLMs to 4096 tokens and 4 sequences.
 */
export function launchShape(modelType: string, parameters: Record<string, unknown>, trainContextSize: number | undefined): LaunchShape {
  const retrieval = modelType === 'embedding' || modelType === 'rerank'
  const requestedContextSize = parameters.n_ctx as number | undefined
  const fallback = retrieval ? (trainContextSize ?? DEFAULT_CONTEXT) : DEFAULT_CONTEXT
  return {
    contextSize: Math.min(requestedContextSize ?? fallback, trainContextSize ?? Number.POSITIVE_INFINITY),
    parallel: (parameters.n_parallel as number | undefined) ?? (retrieval ? DEFAULT_RETRIEVAL_PARALLEL : DEFAULT_PARALLEL),
    requestedContextSize,
  }
}
