/** Launch defaults shared by the model host and the memory estimator, so an estimate matches a launch. */
export const DEFAULT_CONTEXT = 4096
export const DEFAULT_PARALLEL = 4
