/**
 * The launch request and its progress, as `POST /v1/models` and `GET /v1/models/{uid}/progress` carry them. The
 * modules of src/protocol/ describe the HTTP API for the service, the client library, the CLI and the workers
 * alike; they import only the kernel's schema builders (and only the service loads those: the client imports
 * this module's types alone), so the client needs no server code.
 */
import {badRequest} from '../kernel/errors.js'
import * as s from '../kernel/schema.js'

/** A model uid: what `model_uid` may be, and what a model name must look like to serve as one. */
export const MODEL_UID = /^[A-Za-z0-9][\w.-]{0,99}$/
const SIZE = s.union([s.string({minLength: 1}), s.number({minimum: 0})], 'a size in billions such as "0_5" or 7')

/**
 * The most replicas one launch may ask for. Xinference sets no bound, but each replica is a model process of its own:
 * a number past this is a typo rather than a deployment, and is refused before placement instead of starting
 * processes until memory runs out. Placement then checks the replicas' summed memory against each worker's.
 */
export const MAX_REPLICAS = 128

/**
 * Xinference's launch fields that ask for what the service does not do (its clients send them with every launch,
 * mostly as null): accepted at the value that asks for nothing, and otherwise refused with why and what to do instead,
 * naming the field, rather than taken for an unknown engine parameter or dropped.
 */
function onlyWhen<T>(schema: s.Schema<T>, asksNothing: (value: T) => boolean, why: string) {
  return s.optional(
    s.refine(schema, (value, path) => {
      if (!asksNothing(value)) throw badRequest(`\`${path}\` ${why}`, path)
      return value
    }),
  )
}

const PACKAGE_TEXT = s.string({maxLength: 512, minLength: 1})
const MAX_PACKAGES = 64

/** What Xinference's clients send beside the service's own launch fields; see onlyWhen. */
const xinferenceLaunchFields = {
  enable_virtual_env: onlyWhen(
    s.boolean({description: "Xinference's switch; engines that run Python always get a virtual environment of their own, so only true (or null) is taken."}),
    (value) => value,
    'cannot be false: engines that run Python always run in a virtual environment of their own (see Python virtual environments), and the others need none.',
  ),
  envs: onlyWhen(
    s.record(s.string({maxLength: 4096}), {description: 'Only {} (or null): a model process gets the environment the service was started with.'}),
    (value) => Object.keys(value).length === 0,
    "is not supported: a model's process gets the environment the service was started with; set the variables where the service starts.",
  ),
  model_path: onlyWhen(
    s.string({description: 'Not taken at launch (null only): register the model with a file:// model_uri and launch it by name.', maxLength: 4096}),
    (value) => value === '',
    'is not taken at launch: register the model with `model_uri` "file:///…" (POST /v1/model_registrations/{model_type}, where the path is checked against SERVICE_ALLOWED_MODEL_DIRS) and launch it by its name.',
  ),
  n_worker: onlyWhen(
    s.integer({description: 'Workers to shard one replica over; only 1 (a replica runs in one process on one worker).', maximum: MAX_REPLICAS, minimum: 1}),
    (value) => value === 1,
    'can only be 1: a replica runs in one process on one worker here; launch several replicas (`replica`) to spread a model over workers.',
  ),
  peft_model_config: onlyWhen(
    s.record(s.unknown(), {description: 'Only null or without adapters: LoRA adapters are not supported.'}),
    (value) => Object.values(value).every((entry) => entry === null || (Array.isArray(entry) ? entry.length === 0 : typeof entry === 'object' && Object.keys(entry).length === 0)),
    'is not supported: the engines here load no LoRA adapters; merge the adapter into the weights and register the result.',
  ),
  replica_config: onlyWhen(
    s.array(s.record(s.unknown()), {description: 'Only null or []: place replicas with worker_ip and gpu_idx.', maxItems: MAX_REPLICAS}),
    (value) => value.length === 0,
    'is not supported: replicas are placed by the service; use `worker_ip` and `gpu_idx` to choose where a launch runs.',
  ),
  request_limits: onlyWhen(
    s.integer({description: 'Only null: the service does not cap the requests a model takes at once.', minimum: 0}),
    () => false,
    "is not supported: requests a model cannot take at once wait in its queue; leave it null.",
  ),
  virtual_env_find_links: onlyWhen(
    s.array(PACKAGE_TEXT, {description: 'Only null or []: give find_links in the registration\'s virtualenv settings.', maxItems: MAX_PACKAGES}),
    (value) => value.length === 0,
    "is not taken at launch: give `find_links` in the registration's `virtualenv` settings, where they are checked when the model is registered.",
  ),
  virtual_env_packages: onlyWhen(
    s.array(PACKAGE_TEXT, {description: "Only null or []: add packages with the registration's virtualenv.packages.", maxItems: MAX_PACKAGES}),
    (value) => value.length === 0,
    "is not taken at launch: add the packages to the registration's `virtualenv.packages` (POST /v1/model_registrations/{model_type}), where they are checked when the model is registered.",
  ),
}

const launchFields = {
  ...xinferenceLaunchFields,
  download_hub: s.optional(s.string({description: 'Hub to fetch weights from (huggingface, modelscope); overrides SERVICE_MODEL_SRC.', enum: ['huggingface', 'modelscope']})),
  model_engine: s.optional(s.string({description: 'Engine to run the model with (llama.cpp, vllm, …); required for LLM.', minLength: 1})),
  keep_alive: s.optional(
    s.keepAlive({description: 'How long the model stays loaded once idle (a duration such as "5m", or seconds; -1 forever); unloaded, it stays known and a request brings it back. Default: SERVICE_KEEP_ALIVE, else forever.'}),
  ),
  model_format: s.optional(s.string({description: 'Model format, e.g. ggufv2 or pytorch.', minLength: 1})),
  model_name: s.string({
    description: 'Name of a registered model, or a hub model as hf.co/{user}/{repo}:{quantization} (also huggingface.co/…, modelscope.cn/…), registered on its first launch.',
    maxLength: 256,
    minLength: 1,
  }),
  model_size_in_billions: s.optional(SIZE),
  model_type: s.optional(s.string({description: 'Model type (LLM, embedding, …); found from the catalogue when omitted.', minLength: 1})),
  model_uid: s.optional(s.string({description: 'Handle of the instance; defaults to the model name.', pattern: MODEL_UID})),
  gpu_idx: s.optional(
    s.nullable(s.union([s.integer({minimum: 0}), s.array(s.integer({minimum: 0}), {minItems: 1})], 'a GPU index or a list of them, as nvidia-smi numbers them')),
  ),
  on_demand: s.optional(
    s.boolean({description: 'Launch this model again when a request names it while it is not running (after an idle unload, a restart with restoring off, …); default: SERVICE_LOAD_ON_DEMAND.', fromText: true}),
  ),
  n_gpu: s.optional(s.union([s.literal('auto'), s.integer({minimum: 0})], '"auto", null or a number of GPUs')),
  quantization: s.optional(s.string({minLength: 1})),
  replica: s.optional(
    s.integer({
      description: `Number of instances, spread over the workers; requests are balanced among them (round robin). At most ${MAX_REPLICAS}, and only as many as the workers' free memory holds.`,
      maximum: MAX_REPLICAS,
      minimum: 1,
    }),
  ),
  size_in_billions: s.optional(SIZE),
  wait_ready: s.optional(s.boolean({description: 'As the query parameter ?wait_ready= (Xinference 1.0 clients send it in the body); the query wins.', fromText: true})),
  worker_ip: s.optional(s.nullable(s.string({description: 'Run on this worker (its address or host, as `GET /v1/cluster/workers` lists it) instead of the one with the most room.'}))),
}

export const launchSchema = s.object(launchFields, {
  description: 'Launch fields; any other field is an engine parameter (n_ctx, n_parallel, …).',
  title: 'LaunchRequest',
  unknownKeys: 'keep',
})

export const memoryEstimateSchema = s.object(
  {
    ...launchFields,
    context_length: s.optional(s.integer({description: "Context length per request, in tokens (the engine's n_ctx).", minimum: 16})),
  },
  {description: 'The model as a launch names it, and the engine parameters it would be launched with.', title: 'MemoryEstimateRequest', unknownKeys: 'keep'},
)

/** Any field of a launch that is not a launch field: an engine parameter, as JSON or (from the CLI) as a string. */
export interface EngineParameterFields {
  [engineParameter: string]: unknown
}

/** The launch fields by name, with their types. */
export type LaunchFields = s.Infer<typeof launchSchema>

/** A launch as the service receives it, parsed once at the edge (the route, or the client that builds it). */
export type LaunchRequest = LaunchFields & EngineParameterFields

/** `POST /v1/models/memory`: a launch's fields, and the context length to size the KV cache for. */
export type LaunchEstimateRequest = s.Infer<typeof memoryEstimateSchema> & EngineParameterFields

/** The launch fields by name, which are not engine parameters unless an engine declares one of them. */
export const LAUNCH_FIELDS: ReadonlySet<string> = new Set(Object.keys(launchFields))

/**
 * pending → downloading (only when the weights are not cached) or generating (weights made here, on first launch) →
 * installing (an engine that runs Python, when its virtual environment does not exist yet) → loading → ready; or
 * error / cancelled.
 */
export const LAUNCH_STAGES = ['pending', 'downloading', 'generating', 'installing', 'loading', 'ready', 'error', 'cancelled'] as const
export type LaunchStage = (typeof LAUNCH_STAGES)[number]

const bytes = (description: string) => s.number({description, minimum: 0})

export const launchProgressSchema = s.object(
  {
    downloaded_bytes: bytes('Bytes of weights downloaded so far.'),
    error: s.nullable(
      s.object({code: s.string(), message: s.string(), status: s.integer()}, {description: "Why the launch failed or was cancelled, or why the model's process died after it was ready."}),
    ),
    files: s.array(s.object({downloaded_bytes: bytes('Bytes downloaded.'), name: s.string(), total_bytes: bytes('Size of the file.')}, {title: 'DownloadedFile'})),
    hub: s.nullable(s.string()),
    model_uid: s.string(),
    progress: s.number({description: 'The whole launch, from 0 to 1; it never goes back, and reaches 1 when the model is ready.', maximum: 1, minimum: 0}),
    repo: s.nullable(s.string()),
    stage: s.string({enum: LAUNCH_STAGES}),
    total_bytes: bytes('Bytes of weights to download.'),
  },
  {title: 'LaunchProgress'},
)

export type LaunchProgress = s.Infer<typeof launchProgressSchema> & {stage: LaunchStage}

/** `POST /v1/models`'s answer. */
export const launchReplySchema = s.object({model_uid: s.string({description: 'Handle of the launched model.'})}, {title: 'LaunchReply'})

/** `POST /v1/models/memory`'s answer: bytes a launch would need, and where the figures came from. */
export const memoryEstimateReplySchema = s.object(
  {
    context_length: s.integer({description: 'Tokens of context per sequence the launch would get.'}),
    kv_cache_bytes: bytes('The KV cache at that context length.'),
    model_version: s.string(),
    overhead_bytes: bytes('Compute buffers and other per-context memory beyond the KV cache.'),
    source: s.string({description: 'Where the weights were read: local, cache, generated, or the hub.'}),
    total_bytes: bytes('The sum of the parts.'),
    weights_bytes: bytes('The weights, with the companion files.'),
    companion_files: s.optional(
      s.array(
        s.object(
          {
            bytes: s.optional(bytes('Its size, from the cache or the hub\'s metadata.')),
            error: s.optional(s.string({description: 'Why its size is unknown (then it is not counted).'})),
            file_name: s.string(),
            model_id: s.string(),
            role: s.string({description: 'The launch parameter it fills, e.g. vae, clip_l, t5xxl.'}),
            source: s.optional(s.string({description: 'Where the size came from: cache, local, or the hub.'})),
          },
          {title: 'CompanionFileSize'},
        ),
        {description: "The files a launch downloads beside the weights (a GGUF image model's VAE and text encoders); their sizes are counted in weights_bytes."},
      ),
    ),
  },
  {description: 'Engines may add details of their own.', title: 'MemoryEstimate', unknownKeys: 'keep'},
)

export type MemoryEstimateReply = s.Infer<typeof memoryEstimateReplySchema> & {[detail: string]: unknown}
