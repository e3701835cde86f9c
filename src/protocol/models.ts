// Wire types of the model routes; see launch.ts for why they live in src/protocol/.
import * as s from '../kernel/schema.js'

/** launching → ready, or error (a failed load, or a process that died); terminating while it is being stopped. */
export const MODEL_STATUSES = ['launching', 'ready', 'restarting', 'error', 'terminating'] as const
export type ModelStatus = (typeof MODEL_STATUSES)[number]

const unknown = (description: string) => s.optional(s.unknown({description}))

/** A running model as `GET /v1/models` lists it: OpenAI's model object with Xinference's fields; engines may add more. */
export const modelDescriptionSchema = s.object(
  {
    context_length: s.unknown({description: 'Tokens of context, when the model has one.'}),
    created: s.integer({description: 'Seconds since the epoch when it was launched.'}),
    dimensions: unknown('Embedding models: the length of their vectors.'),
    engine_parameters: s.record(s.unknown(), {description: 'The engine parameters it was launched with.'}),
    error: s.optional(s.string({description: 'Why it failed.'})),
    id: s.string({description: 'The model uid, which requests name as `model`.'}),
    last_error: s.optional(s.nullable(s.string({description: "The last crash's (or failed relaunch's) reason."}))),
    max_tokens: unknown('Embedding and rerank models: the longest input, in tokens.'),
    model_ability: s.array(s.string()),
    model_description: s.unknown(),
    model_engine: s.string(),
    model_family: s.string({description: "The family's `model_family` (audio, image and video families have one), else the model's name."}),
    model_format: s.string(),
    model_hub: s.string(),
    model_lang: s.unknown(),
    model_name: s.string(),
    model_size_in_billions: s.string(),
    model_type: s.string(),
    object: s.literal('model'),
    owned_by: s.string(),
    pid: s.nullable(s.integer({description: 'Process id of its first replica.'})),
    progress: s.optional(s.number({description: 'While launching: how far, from 0 to 1.', maximum: 1, minimum: 0})),
    quantization: s.string(),
    replica: s.integer({minimum: 1}),
    replicas: s.array(s.object({model_uid: s.string(), pid: s.nullable(s.integer()), worker: s.string()}, {title: 'ModelReplica'})),
    revision: s.nullable(s.string({description: 'The hub revision of its weights, when the registration pins one.'})),
    restarts: s.optional(s.integer({description: 'Relaunches after crashes since it was launched (self-healing).', minimum: 0})),
    stage: s.optional(s.string({description: 'While launching: its stage.'})),
    status: s.string({enum: MODEL_STATUSES}),
    worker: s.string({description: 'The workers its replicas run on, comma-separated.'}),
  },
  {title: 'ModelDescription', unknownKeys: 'keep'},
)

export type ModelDescription = s.Infer<typeof modelDescriptionSchema> & {status: ModelStatus; [field: string]: unknown}

export const modelListSchema = s.object({data: s.array(modelDescriptionSchema), object: s.literal('list')}, {title: 'ModelList'})
