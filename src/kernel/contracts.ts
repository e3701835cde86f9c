/**
 * The contract between the kernel and its plugins. A plugin (core or user-installed) implements the custom
 * oclif hook `service:register`, receives a `KernelApi` and returns a `Contribution`: plain data plus
 * functions the kernel calls. Plugins never import each other or mutate kernel state; user plugins carry
 * their own copies of libraries, so everything here is structural and crosses the boundary by shape.
 */
import type {ModelFamily, ResolvedSpec} from './catalogue.js'
import type {CommandLineFlagsOptions} from './command-line-flags.js'
import type {ErrorCode, ServiceError} from './errors.js'
import type {EngineBuild} from './engine-build-contract.js'
import type {ExternalEngine} from './external-engine.js'
import type {ImageReader} from './image-inputs.js'
import type {JsonLinesCall} from './json-lines-program.js'
import type {MediaKit} from './media-kit.js'
import type {LocalPathCheck} from './model-files.js'
import type {OpenAICompatibleOperations, OpenAICompatibleOptions} from './openai-upstream.js'
import type {PcmSpeechOperations} from './pcm-speech-program.js'
import type {ToolCallFormat} from './tool-calls.js'
import type {ParameterReach} from './reach.js'
import type {EngineOperations, OperationMap, UntypedOperations} from './operations.js'
import type {ModelHandle, RouteDefinition} from './route-contract.js'
import type {PythonEnvironment, PythonRequirements} from './virtualenv.js'
import type * as schema from './schema.js'

export type {AutomaticBuild, BuildRequirement, EngineBuild} from './engine-build-contract.js'
export type {ErrorStyle, ModelDirectory, ModelHandle, ModelLookup, ModelScope, ModelUse, ModelUseRequest, QueryParameter, RouteDefinition, RouteExample, RouteRequest, RouteResult} from './route-contract.js'

/** Bumped when the contract changes incompatibly; a plugin may check it and refuse to register. */
export const KERNEL_API_VERSION = 1

/** Values a log line carries beside its message: `key=value` in text logs, properties in JSON logs. */
export type LogFields = Record<string, boolean | number | string | undefined>

export interface Logger {
  debug(message: string, fields?: LogFields): void
  info(message: string, fields?: LogFields): void
  warn(message: string, fields?: LogFields): void
  error(message: string, fields?: LogFields): void
}

/** Capabilities the kernel hands to plugins at registration time. */
export interface KernelApi {
  apiVersion: number
  version: string
  schema: typeof schema
  errors: ErrorFactory
  /**
   * Throws a 400 naming the model's type and what it can do unless it has `ability` (`chat`, `embed`, `rerank`…):
   * how a route answers a request sent to a model of the wrong type. `what` completes "cannot …".
   */
  requireAbility(model: Omit<ModelHandle, 'invoke'>, ability: string, what: string): void
  log: Logger
  /** Helpers for engines that run a program of their own (`EngineDefinition.external`). */
  external: {
    /** `chat` and `complete` proxied to a program that speaks the OpenAI API, streaming as it generates. */
    openAICompatible(options?: OpenAICompatibleOptions): OpenAICompatibleOperations
    /** Engine parameters as a Python server's flags: `max_model_len: 4096` → `--max-model-len 4096`. */
    commandLineFlags(parameters: Record<string, unknown>, options?: CommandLineFlagsOptions): string[]
    /** `speak` proxied to a program that answers POST /speak with PCM as it synthesizes (see pcm-speech-program.ts). */
    pcmSpeech(): PcmSpeechOperations
    /** Calls to a program that answers JSON lines as it works, its failures naming it (see json-lines-program.ts). */
    jsonLines(programName: string): JsonLinesCall
    /**
     * How an LLM writes tool calls: the launch's `tool_call_format`, its family's `tool_parser`, or the markers of its
     * chat template (the family's, or the files beside its weights); undefined when nothing says. The service splits
     * such calls out of an external program's text itself; a server with parsers of its own is started with its one.
     */
    toolCallFormat(request: Pick<LoadRequest, 'family' | 'modelPath' | 'parameters'>): ToolCallFormat | undefined
  }
  /**
   * Pictures a chat request shows a model, read within bounds and known to be pictures; URLs never reach this machine's
   * or its networks' addresses unless the operator lists the host (SERVICE_ALLOWED_IMAGE_HOSTS, see image-inputs.ts).
   */
  images: ImageReader
  /** What the image and video model types share: their families, request checks and url answers. */
  media: MediaKit
  /** Files and folders on the service's machine that launch parameters name (a VAE, a chat template). */
  files: {
    /**
     * The real path of the file (or folder) a parameter names, after the checks a `file://` model URI gets: absolute,
     * existing, inside SERVICE_ALLOWED_MODEL_DIRS once symlinks are resolved; otherwise a 400 naming the parameter.
     */
    localPath(value: unknown, check: LocalPathCheck): Promise<string>
  }
  /** The operator's allow-lists that an engine's program enforces itself, in case a launch reaches it unchecked. */
  policy: {
    /** Modules the flexible launcher may import (SERVICE_ALLOWED_PYTHON_MODULES); empty: whatever the registration names. */
    allowedPythonModules: readonly string[]
  }
  /**
   * The store of records named `name` (lower-case letters, digits, dashes) kept between requests and restarts: private
   * files in SERVICE_HOME/<name>, at most `bounds` of them, the oldest dropped. Each call with a name answers the same store.
   */
  records(name: string, bounds: RecordStoreBounds): RecordStore
}

export interface RecordStoreBounds {
  maxCount: number
  /** Of all the records together, and so of any one: a record larger is refused. */
  maxBytes: number
}

/** JSON records by id; an id that is not plain (letters, digits, `_`, `-`, up to 128) is never found. */
export interface RecordStore {
  put(id: string, record: unknown): Promise<void>
  get(id: string): Promise<unknown>
  delete(id: string): Promise<boolean>
}

/**
 * How plugins make the errors the kernel renders (status, code, message, param): routes get it as
 * `KernelApi.errors`, engine hosts as `LoadContext.errors`. A plain Error thrown instead becomes a 500.
 */
export interface ErrorFactory {
  badRequest(message: string, param?: string): ServiceError
  notFound(message: string): ServiceError
  create(status: number, code: ErrorCode, message: string, param?: string): ServiceError
}

export interface Contribution {
  modelTypes?: ModelTypeDefinition[]
  engines?: EngineDefinition[]
  catalogue?: CatalogueContribution[]
  routes?: RouteDefinition[]
  weightsGenerators?: WeightsGenerator[]
}

// ---------------------------------------------------------------------------------------------- model types

export interface ModelTypeDefinition {
  /** As Xinference writes it: `LLM`, `embedding`, `rerank`, `image`, `audio`, `video`, `flexible`. */
  name: string
  description: string
  /** What a model of this type can be asked to do when its family names no abilities. */
  defaultAbilities: string[]
  /**
   * Turns the type's own registration format into the catalogue's (`model_specs`) before it is validated and stored:
   * Xinference registers a flexible model as `{model_name, model_uri, launcher, …}`, with no specs. It may throw a
   * 400 ServiceError naming the field that keeps it from doing so.
   */
  normalizeFamily?(family: ModelFamily): ModelFamily
  /** Checks a family submitted for registration; throw a 400 ServiceError naming the field. */
  validateFamily?(family: ModelFamily): void
  /** Columns `servicectl registrations` shows for this type between Type and Is-built-in, as [header, family field]; Name alone when absent. */
  registrationColumns?: Array<[string, string]>
}

// ------------------------------------------------------------------------------------------------- engines

/** Who asks a registration or launch, as far as what it may make the service run or read (reach.ts). */
export interface Authority {
  admin: boolean
  /** The user, for the messages and the registration quota; null with access control off. */
  username: string | null
  /** The name of the caller's API key (or of the user's logins), which usage is kept under; absent with access control off. */
  keyName?: string
  /** The key names whose usage the caller may read, when not admin: its own key's, or with a login all of the user's. */
  usageKeys?: readonly string[]
}

export interface EngineParameter {
  type: 'integer' | 'number' | 'string' | 'boolean'
  description: string
  minimum?: number
  maximum?: number
  enum?: string[]
  /**
   * What the parameter makes the service read or run beyond the request: a file or folder of its machine, a
   * template that is a file's path unless given inline, or the model repository's own code (`trust_remote_code`).
   * Such a parameter needs the admin permission or the operator's allow-list (see reach.ts).
   */
  reaches?: ParameterReach
}

export interface EngineDefinition {
  /** As users type it in `--model-engine`; matched case-insensitively. */
  name: string
  modelTypes: string[]
  /** Model formats it runs (`ggufv2`, `pytorch`, …). */
  formats: string[]
  /** Every engine parameter it accepts at launch; anything else is a 400 naming it. */
  parameters: Record<string, EngineParameter>
  /**
   * Absolute path or file URL of the module that runs inside each model instance's own child process. Its
   * default export is an `EngineHost` (see below). The kernel spawns the process; the engine only serves it.
   * An engine gives either this or `external`.
   */
  hostModule?: string
  /**
   * Runs each model as a program of its own (a Python server, a native binary) instead of `hostModule`: the kernel
   * gives it a port, environment and log file, waits for its health check and routes operations to it. Declare it
   * as `ExternalEngine<LlmOperations>` (its model type's operations) to have its operations checked.
   */
  external?: ExternalEngine
  /**
   * The Python packages an `external` engine's program needs. Before the program starts, the kernel creates (or
   * reuses) a virtual environment holding them, with the registration's `virtualenv` settings merged over them, and
   * gives its interpreter to `external.command()` as `context.python`.
   */
  python?: PythonRequirements
  /**
   * Environment variables each model instance's process starts with, for settings a runtime reads only at
   * start (e.g. UV_THREADPOOL_SIZE). The service's own environment wins, so a user can still override them.
   */
  processEnvironment?: Record<string, string>
  /**
   * Whether the engine can run on a worker's machine at all (platform, devices), from what the worker reports; without
   * one, on this machine (libraries present, platform). A reason if not.
   */
  availability?(worker?: WorkerFacts): Promise<true | string> | true | string
  /**
   * Whether the engine can run this spec on this worker, from what the worker reports of itself (its platform, GPUs
   * and memory) and the spec alone: a pure, synchronous answer, asked for every row of `GET /v1/engines/{model}` and
   * before a launch is placed, so it reads no file and runs no program. A reason (one sentence, with what to use
   * instead) if it cannot; a launch of that pair is refused with it, naming `model_engine`.
   */
  canRun?(request: Pick<LoadRequest, 'modelName' | 'spec'>, worker: WorkerFacts): true | string
  /**
   * Refuses a launch the engine will never run, from what the launch names (family, spec, parameters) alone: it is
   * asked before any weights are downloaded or environment is made, so nothing is fetched for a launch that would
   * fail at load. Throws a ServiceError (from `api.errors`) saying why and what to launch instead.
   */
  checkLaunch?(request: Omit<LoadRequest, 'modelPath'>): Promise<void> | void
  /**
   * Refuses a launch from the model's files, once they are here and before the engine's virtual environment is made
   * (see `python`): what the weights' own configuration says the engine cannot run. Throws a ServiceError as
   * `checkLaunch` does.
   */
  checkFiles?(request: LoadRequest): Promise<void> | void
  /**
   * Absolute path or file URL of a module whose default export is a `MemoryEstimator`, for
   * `servicectl cal-model-mem`. It runs in a short-lived child process of its own, like `hostModule`.
   */
  estimatorModule?: string
  /** How to build the engine for this machine, for `servicectl engine build`; absent when there is nothing to build. */
  build?: EngineBuild
}

/** What a worker reports of its machine, as an engine's `canRun` is told it. */
export interface WorkerFacts {
  id: string
  /** Node's names (`linux`, `darwin`; `x64`, `arm64`); undefined from a worker too old to report them. */
  platform?: string
  arch?: string
  /** Its NVIDIA GPUs as nvidia-smi reports them; none on a machine that runs on its CPU alone. */
  gpus: Array<{name: string; memory_total_bytes: number}>
  memoryTotalBytes: number
  /** The version of the Python it makes environments from (`3.11.7`); null: it has none; undefined: not reported. */
  python?: string | null
}

/** What `cal-model-mem` asks an engine: how much memory these weights need when launched with these parameters. */
export interface MemoryEstimateRequest {
  /** Local paths, or URLs on a hub, of the weight files (for split GGUF, every part in order). */
  files: string[]
  /** Headers the URLs need (a hub token). */
  headers: Record<string, string>
  /** Each file's bytes, where the hub's metadata lists them (files on a hub). */
  sizes?: number[]
  /** Engine parameters as a launch would give them (n_ctx, n_parallel, n_gpu_layers, …), already validated. */
  parameters: Record<string, unknown>
  spec: ResolvedSpec
  /** The model's type, whose launch defaults (context, parallel sequences) an estimate should use. */
  modelType: string
}

/** Bytes of memory a launch needs; `total_bytes` is the sum of the parts. */
export interface MemoryEstimate {
  weights_bytes: number
  kv_cache_bytes: number
  /** Compute buffers and other per-context memory beyond the KV cache. */
  overhead_bytes: number
  total_bytes: number
  /** Of the total, how much goes to the GPU (0 on a CPU-only machine). */
  gpu_bytes?: number
  /** Tokens of context per sequence the launch would get. */
  context_length: number
  [detail: string]: unknown
}

/** `errors` makes the errors a person can act on (a launch parameter that cannot work), as in `LoadContext`. */
export type MemoryEstimator = (request: MemoryEstimateRequest, context: {errors: ErrorFactory}) => Promise<MemoryEstimate>

/** What the kernel sends to an instance process to load its model. */
export interface LoadRequest {
  modelUid: string
  modelType: string
  modelName: string
  /** Local path of the weights' entry file (for split GGUF, the first part). */
  modelPath: string
  spec: ResolvedSpec
  family: ModelFamily
  parameters: Record<string, unknown>
  /**
   * The GPUs (nvidia-smi indices) given to this model alone, when its launch asked for some (`n_gpu`, `gpu_idx`);
   * its process also has them as CUDA_VISIBLE_DEVICES. Absent: the process sees every GPU of the machine.
   */
  devices?: number[]
}

export interface LoadedModelInfo {
  /** Abilities actually available (e.g. `chat` only when a chat template was found). */
  abilities?: string[]
  contextLength?: number
  [field: string]: unknown
}

/**
 * A model loaded by an engine. `operations` are those of its model type (see operations.ts), each taking a payload
 * and yielding events whose last says how the work ended; the route plugin gives the events their wire shape.
 * Aborting the signal must stop the work. A model may lack some (an LLM without a chat template has no `chat`).
 */
export interface LoadedModel<Ops extends OperationMap<Ops> = UntypedOperations> {
  info: LoadedModelInfo
  operations: Partial<EngineOperations<Ops>>
  dispose(): Promise<void>
  /** How busy it is now, for the metrics: read every fraction of a second while the model runs, so it must be cheap. */
  usage?(): SequenceUsage
}

/** An engine's sequences (llama.cpp's slots, vLLM's running batch) and the requests waiting for one. */
export interface SequenceUsage {
  sequencesTotal: number
  sequencesInUse: number
  requestsWaiting: number
}

export interface LoadContext {
  log: Logger
  errors: ErrorFactory
  signal: AbortSignal
  /** Reports how far loading has got, from 0 to 1, for the launch's progress. */
  progress?(fraction: number): void
  /**
   * A folder of the service's home for this engine alone, kept across launches, for what it derives from model files
   * and would otherwise work out at each load; it may not exist yet. Absent where the worker keeps none.
   */
  cacheDir?: string
}

/** `Ops`: the operations of the model types it serves, e.g. `LlmOperations & EmbeddingOperations`. */
export interface EngineHost<Ops extends OperationMap<Ops> = UntypedOperations> {
  load(request: LoadRequest, context: LoadContext): Promise<LoadedModel<Ops>>
}

// ------------------------------------------------------------------------------------------ weights made here

/**
 * Makes a model's weight files on this machine instead of downloading them: the source of catalogue specs whose hub
 * (`model_src` key) is `generated`, such as `tiny-random-llm`, so that a model can be tried with no network at all.
 * Such a spec's `model_id` names one of the generator's recipes, and its file-name template the files. An engine
 * plugin contributes one generator per model format it can write; what is made must not depend on anything but the
 * recipe (a fixed seed), so the same entry always gives the same files.
 */
export interface WeightsGenerator {
  /** The model format of the files it writes (`ggufv2`), as specs name it. */
  format: string
  /** What it can make, by the name a spec's `model_id` gives. */
  recipes: string[]
  /**
   * Python packages the generator runs with (a generator that has a Python library build the model): the kernel
   * makes or reuses their virtual environment first, as for an engine's `python`, and gives it as `request.python`.
   * Declare the same packages as the engine that runs the files, and both use one environment.
   */
  python?: PythonRequirements
  /**
   * Writes the recipe's files to `files`, in the order the spec names them. The kernel gives temporary paths in the
   * model's cache folder and renames them into place once this resolves, so a crash never leaves a half-made model.
   */
  generate(request: WeightsGenerationRequest): Promise<void>
}

export interface WeightsGenerationRequest {
  recipe: string
  /** Absolute paths to write, one per file of the spec. */
  files: string[]
  /** Aborted when every launch waiting for the files has been cancelled. */
  signal: AbortSignal
  /** The virtual environment of the generator's `python` packages, when it declares some. */
  python?: PythonEnvironment
}

// --------------------------------------------------------------------------------------------- catalogue

export interface CatalogueContribution {
  modelType: string
  families: ModelFamily[]
}
