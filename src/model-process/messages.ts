/**
 * Messages between a worker and one model instance process, over the Node IPC channel. Requests are
 * multiplexed by id so one process serves many concurrent requests (its engine batches them).
 */
import type {LoadedModelInfo, LoadRequest, SequenceUsage} from '../kernel/contracts.js'

import {ServiceError, type ServiceErrorShape} from '../kernel/errors.js'
import {nestedPast} from '../kernel/schema.js'

/**
 * How deep a value may nest to cross the channel. Its serialization ('advanced', V8's) decodes a message recursively
 * and overflows its stack near 1,700 levels; that happens in the receiving process's channel code, outside any
 * request's, and kills the process with every request it serves. Requests' bodies are bounded far below (the schema
 * layer's MAX_NESTING), so this is the channel's own guard, with room for the messages' own levels around a value.
 */
export const CHANNEL_NESTING = 512

/**
 * Refuses `value` (what `what` names) if it nests too deeply for the channel, with `status`: a request's payload is the
 * client's doing, a 400; an answer an engine made is the service's, a 500.
 */
export function checkChannelNesting(value: unknown, what: string, status: 400 | 500): void {
  if (nestedPast(value, CHANNEL_NESTING) === undefined) return
  throw new ServiceError(status, status === 400 ? 'invalid_request' : 'internal_error', `${what} nests more than ${CHANNEL_NESTING} levels deep, more than a model process's channel carries.`)
}

export type ToInstance =
  | {type: 'load'; hostModule: string; request: LoadRequest; cacheDir?: string}
  /** `requestId`: the HTTP request the operation is for, which the model's log lines about it carry. */
  | {type: 'invoke'; id: number; operation: string; payload: unknown; requestId?: string}
  | {type: 'abort'; id: number}
  | {type: 'dispose'}

/** What a request's operation sends back: its events in order, then how it ended. */
export type RequestMessage = {type: 'event'; id: number; event: unknown} | {type: 'end'; id: number} | {type: 'error'; id: number; error: ServiceErrorShape}

export type FromInstance =
  | {type: 'load-progress'; fraction: number}
  | {type: 'ready'; info: LoadedModelInfo; operations: string[]}
  /** The engine's sequences and waiting requests, sent when they change. */
  | {type: 'usage'; usage: SequenceUsage}
  | {type: 'load-failed'; error: ServiceErrorShape}
  | RequestMessage
  /** Several requests' messages at once, in the order they were produced. */
  | {type: 'batch'; messages: RequestMessage[]}
  | {type: 'disposed'}
