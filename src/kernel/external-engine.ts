/**
 * The contract of an engine that runs each model as a program of its own (a Python server such as `vllm serve`, a
 * native binary) rather than as a Node module in a model process. The kernel owns everything around the program:
 * it picks a free port, builds its environment (with the devices it may use), appends its output to the model's
 * log, waits for its health check, routes operations to it, stops it in order and reports its crash on the model.
 * The engine only says how to start it and how each operation maps onto what it serves.
 */
import type {LoadedModelInfo, LoadRequest} from './contracts.js'
import type {OperationMap, OperationSpec, UntypedOperations} from './operations.js'
import type {PythonEnvironment} from './virtualenv.js'

/** What the kernel gives the engine to build the program's command line from. */
export interface ExternalLaunchContext {
  /** A free TCP port on 127.0.0.1 the program must listen on. */
  port: number
  /** `http://127.0.0.1:<port>`. */
  baseUrl: string
  /**
   * What the program's environment gets beyond the service's own, which it inherits: the engine's
   * `processEnvironment`, and `CUDA_VISIBLE_DEVICES` (with `CUDA_DEVICE_ORDER=PCI_BUS_ID`) when the load request
   * names devices. The command's `env` is merged over it. Whatever `PYTHONPATH` it ends with, the program also finds
   * the service's Python helpers there (`service_http`: JSON and event answers, `GET /health`, errors, SIGTERM; see
   * python/service_http.py).
   */
  env: Record<string, string>
  /** Indexes of the GPUs the model may use, from the load request; empty when it names none. */
  devices: number[]
  /**
   * The virtual environment made for the engine's `python` packages (and the registration's `virtualenv`); present
   * only when the engine declares `python`. Run the program with `python.executable`; its environment is activated
   * (`VIRTUAL_ENV`, and `PATH` starting with `python.binDir`), so what it runs by name comes from there too.
   */
  python?: PythonEnvironment
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
  /** How long a streamed answer's reads may rest once it has begun (see postForEvents); read as it comes unless given. */
  readIntervalMs?: number
}

/**
 * The operations of a model served by its program, checked against its model type's (`ExternalOperations<LlmOperations>`):
 * each takes the type's payload (a `ChatPayload` for `chat`) and yields the type's events, as they arrive when the
 * program streams.
 */
export type ExternalOperations<Ops extends OperationMap<Ops> = UntypedOperations> = {
  [K in keyof Ops]: (payload: Ops[K]['payload'], endpoint: ExternalEndpoint) => AsyncIterable<Ops[K]['event']>
}

/**
 * Operations as the kernel holds them whatever the model type: a payload it forwards without reading (typed
 * `never`, so that every model type's operations fit) and events it passes on to the route.
 */
export type ForwardedOperations = Record<string, OperationSpec<never, unknown>>

/**
 * `Ops`: the operations of the model types it serves, e.g. `LlmOperations`; annotate the engine with them
 * (`ExternalEngine<LlmOperations>`) to have its operations checked at compile time.
 */
export interface ExternalEngine<Ops extends OperationMap<Ops> = ForwardedOperations> {
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
  operations: Partial<ExternalOperations<Ops>>
  /** What the model can do once ready (abilities, context length). */
  info?(request: LoadRequest): LoadedModelInfo
  /** How long the program has to exit after SIGTERM before it is killed; 10 s unless given. */
  stopGraceMs?: number
  /**
   * Why the program exited before it was ready, in the engine's own words, from what it wrote to the model's log
   * since it started: a cause the engine recognises (a program whose last line only says "see above" hides it far
   * up its output). The launch then fails with this reason and the log's path; undefined keeps the last lines.
   */
  startFailure?(output: string): string | undefined
}
