import type {EmbeddingOperations, ErrorFactory, LlmOperations, RerankOperations} from 'service-toolkit'

/** Every operation this engine implements: those of the model types it serves. */
export type LlamaCppOperations = LlmOperations & EmbeddingOperations & RerankOperations

/**
 * The kernel's error factory, as `load()` receives it. A model process serves one model, so the engine's modules
 * share this one rather than each being handed it.
 */
let factory: ErrorFactory | undefined

export function useErrorFactory(errors: ErrorFactory): void {
  factory = errors
}

function kernelFactory(message: string): ErrorFactory {
  if (!factory) throw new Error(`the llama.cpp engine raised "${message}" before load() gave it the kernel's error factory`)
  return factory
}

/** A 400 naming the request field at fault. */
export function requestError(message: string, param?: string): Error {
  return kernelFactory(message).badRequest(message, param)
}

/** A 400 for a prompt that does not fit the context, with OpenAI's code for it. */
export function contextLengthError(message: string, param: string): Error {
  return kernelFactory(message).create(400, 'context_length_exceeded', message, param)
}
