/**
 * The request a piece of work is for, carried along the async calls it makes rather than through every
 * signature: the HTTP app enters it per request, the worker hands it on to the model process with each
 * operation, and loggers read it so every line about a request carries its id.
 */
import {AsyncLocalStorage} from 'node:async_hooks'

export interface RequestContext {
  requestId: string
}

const context = new AsyncLocalStorage<RequestContext>()

/** Runs `work` (and everything it starts) as part of the request `requestId`. */
export function withRequestId<T>(requestId: string, work: () => T): T {
  return context.run({requestId}, work)
}

/** The id of the request the current work is for, if it is for one. */
export function currentRequestId(): string | undefined {
  return context.getStore()?.requestId
}
