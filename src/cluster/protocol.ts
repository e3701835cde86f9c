/**
 * Messages between a worker and one model instance process, over the Node IPC channel. Requests are
 * multiplexed by id so one process serves many concurrent requests (its engine batches them).
 */
import type {LoadedModelInfo, LoadRequest} from '../kernel/contracts.js'
import type {ServiceErrorShape} from '../kernel/errors.js'

export type ToInstance =
  | {type: 'load'; hostModule: string; request: LoadRequest}
  | {type: 'invoke'; id: number; operation: string; payload: unknown}
  | {type: 'abort'; id: number}
  | {type: 'dispose'}

export type FromInstance =
  | {type: 'load-progress'; fraction: number}
  | {type: 'ready'; info: LoadedModelInfo; operations: string[]}
  | {type: 'load-failed'; error: ServiceErrorShape}
  | {type: 'event'; id: number; event: unknown}
  | {type: 'events'; id: number; events: unknown[]}
  | {type: 'end'; id: number}
  | {type: 'error'; id: number; error: ServiceErrorShape}
  | {type: 'disposed'}
