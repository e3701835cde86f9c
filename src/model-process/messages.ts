/**
 * Messages between a worker and one model instance process, over the Node IPC channel. Requests are
 * multiplexed by id so one process serves many concurrent requests (its engine batches them).
 */
import type {LoadedModelInfo, LoadRequest, SequenceUsage} from '../kernel/contracts.js'
import type {ServiceErrorShape} from '../kernel/errors.js'

export type ToInstance =
  | {type: 'load'; hostModule: string; request: LoadRequest}
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
