// Wire types of the model routes; see launch.ts for why they live in src/protocol/.

/** launching → ready, or error (a failed load, or a process that died); terminating while it is being stopped. */
export type ModelStatus = 'launching' | 'ready' | 'restarting' | 'error' | 'terminating'

/** A running model as `GET /v1/models` lists it: OpenAI's model object with Xinference's fields. */
export interface ModelDescription {
  id: string
  object: 'model'
  created: number
  owned_by: string
  model_type: string
  model_name: string
  model_engine: string
  model_format: string
  model_size_in_billions: string
  quantization: string
  model_hub: string
  model_ability: string[]
  model_lang: unknown
  model_description: unknown
  context_length: unknown
  /** Embedding models: the vector length. */
  dimensions?: unknown
  /** Embedding and rerank models: the longest input, in tokens. */
  max_tokens?: unknown
  engine_parameters: Record<string, unknown>
  replica: number
  status: ModelStatus
  /** The workers its replicas run on, comma-separated. */
  worker: string
  replicas: Array<{model_uid: string; pid: number | null; worker: string}>
  pid: number | null
  /** While launching. */
  stage?: string
  progress?: number
  /** Why it failed. */
  error?: string
  /** Self-healing: relaunches after crashes since it was launched, and the last crash's (or failed relaunch's) reason. */
  restarts?: number
  last_error?: string | null
  [field: string]: unknown
}
