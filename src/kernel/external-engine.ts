/**
 * The contract of an engine that runs each model as a program of its own (a Python server such as `vllm serve`, a
 * native binary) rather than as a Node module in a model process. The kernel owns everything around the program:
 * it picks a free port, builds its environment (with the devices it may use), appends its output to the model's
 * log, waits for its health check, routes operations to it, stops it in order and reports its crash on the model.
 * The engine only says how to start it and how each operation maps onto what it serves.
 */
import type {LoadedModelInfo, LoadRequest} from './contracts.js'

/** What the kernel gives the engine to build the program's command line from. */
export interface ExternalLaunchContext {
  /** A free TCP port on 127.0.0.1 the program must listen on. */
  port: number
  /** `http://127.0.0.1:<port>`. */
  baseUrl: string
  /**
   * What the program's environment gets beyond the service's own, which it inherits: the engine's
   * `processEnvironment`, and `CUDA_VISIBLE_DEVICES` when the load request names devices. The command's `env` is
   * merged over it.
   */
  env: Record<string, string>
  /** Indexes of the GPUs the model may use, from the load request; empty when it names none. */
  devices: number[]
}

/** The program to run, as given (no shell). */
export interface ExternalCommand {
  file: string
  args: string[]
  /** Added to the launch context's environment. */
  env?: Record<string, string>
  cwd?: string
}

/** Where an operation reaches the running program. */
export interface ExternalEndpoint {
  /** The uid of the model the program serves (a good `--served-model-name`). */
  modelUid: string
  baseUrl: string
  port: number
  /** Aborted when the request's client goes away or the program dies: pass it to every `fetch`. */
  signal: AbortSignal
}

/**
 * One operation of a model served by its program: takes the model type's payload (a `ChatPayload` for `chat`),
 * yields the model type's events. Streaming replies should be yielded as they arrive.
 */
export type ExternalOperation = (payload: unknown, endpoint: ExternalEndpoint) => AsyncIterable<unknown>

export interface ExternalEngine {
  /** The program that serves one model instance: it must listen on `context.port` and answer `health.path`. */
  command(request: LoadRequest, context: ExternalLaunchContext): ExternalCommand | Promise<ExternalCommand>
  health: {
    /** Path answered with a 2xx once the model is loaded, e.g. `/health`. */
    path: string
    /** How long loading may take before the launch fails (a large model on a slow disk: minutes). */
    timeoutMs: number
    /** Pause between checks; 250 ms unless given. */
    intervalMs?: number
  }
  /** How each operation maps onto the program; see `api.external.openAICompatible` for servers that speak OpenAI. */
  operations: Record<string, ExternalOperation>
  /** What the model can do once ready (abilities, context length). */
  info?(request: LoadRequest): LoadedModelInfo
  /** How long the program has to exit after SIGTERM before it is killed; 10 s unless given. */
  stopGraceMs?: number
}
