/**
 * The typed client for the service's HTTP API. `servicectl` uses it for every command, and it is the
 * package's main export for programs:
 *
 * @example
 * const client = new Client('http://127.0.0.1:9997')
 * const uid = await client.launch({model_name: 'qwen2.5-instruct', model_engine: 'llama.cpp', size_in_billions: '0_5', quantization: 'q4_0'})
 * const reply = await client.model(uid).chat([{role: 'user', content: 'Hello'}])
 * for await (const chunk of client.model(uid).chatStream([{role: 'user', content: 'Hi'}])) process.stdout.write(chunk.choices[0]?.delta?.content ?? '')
 *
 * With access control on, pass `{apiKey: 'sk-…'}` as the second argument, or call `await client.login(username, password)` first.
 *
 * It imports nothing from the server, nor any `node:` module (only `fetch`, web streams and timers), so it
 * runs in a browser as in Node; `service-toolkit/client` is its entry point.
 */
import type {CachedModel as CacheEntry} from '../protocol/cache.js'
import type {ClusterInfo} from '../protocol/cluster.js'
import type {EngineBuildList, EngineBuildStatus} from '../protocol/engine-build.js'
import type {VllmSupportedModels} from '../protocol/engine-models.js'
import type {LaunchRecord, ModelEvent} from '../protocol/events.js'
import type {LaunchEstimateRequest, LaunchProgress, LaunchRequest, MemoryEstimateReply} from '../protocol/launch.js'
import type {ChatMessage} from '../protocol/chat.js'
import type {ModelDescription} from '../protocol/models.js'
import type {EngineMatrix} from '../protocol/registrations.js'
import type {CreateEmbeddingResponse, EmbeddingInput, EmbeddingOptions, RerankOptions, RerankResponse} from '../protocol/retrieval.js'
import type {VirtualEnvironment} from '../protocol/virtualenvs.js'

import {ServiceError, statusOfErrorType} from '../kernel/errors.js'
import {VERSION_HEADER} from '../protocol/version.js'
import {type SpeechOptions, speechBytes, type Transcription, type TranscriptionOptions, transcriptionReply, transcriptionRequest} from './audio.js'
import {errorFromReply, eventStreamBody, notTheServiceError, sendJson} from './http.js'
import {MediaModelCalls} from './media.js'
import {readEventData} from './server-sent-events.js'
import {CLIENT_VERSION} from './version.js'

export const DEFAULT_ENDPOINT = 'http://127.0.0.1:9997'

export interface ClientOptions {
  /** An API key, or an access token from `login`, sent as `Authorization: Bearer` (ignored when access control is off). */
  apiKey?: string
  /** Called once when the server's version differs from this client's (default: a warning on stderr). */
  onVersionMismatch?: (message: string) => void
  fetch?: typeof fetch
  /** Receives one line per HTTP call (method, URL, status, time), e.g. for `--log-level debug`. */
  trace?: (line: string) => void
}

export type {ChatContentPart, ChatMessage} from '../protocol/chat.js'

export interface ChatCompletion {
  id: string
  object: 'chat.completion'
  created: number
  model: string
  /** `reasoning_content`: a reasoning model's thinking, split from its answer; null when it did not think. */
  choices: Array<{index: number; message: {role: 'assistant'; content: string | null; reasoning_content?: string | null}; finish_reason: string}>
  /** `prompt_tokens_details.cached_tokens`: of prompt_tokens, those the engine took from its cache, where it says. */
  usage: {prompt_tokens: number; completion_tokens: number; total_tokens: number; prompt_tokens_details?: {cached_tokens: number}}
}

export interface ChatCompletionChunk {
  id: string
  object: 'chat.completion.chunk'
  created: number
  model: string
  choices: Array<{index: number; delta: {role?: string; content?: string; reasoning_content?: string}; finish_reason: string | null}>
  usage?: ChatCompletion['usage'] | null
}

export interface Completion {
  id: string
  object: 'text_completion'
  created: number
  model: string
  choices: Array<{index: number; text: string; finish_reason: string | null}>
  usage?: ChatCompletion['usage']
}

/** `POST /v1/models`: the launch fields, and any engine parameter (n_ctx, n_parallel, …). */
export type LaunchOptions = LaunchRequest

/** A running model as `GET /v1/models` lists it. */
export type RunningModel = ModelDescription

/** The answer to `login`: an OAuth2 bearer token. */
export interface AccessToken {
  access_token: string
  token_type: 'bearer'
  /** Seconds until it expires. */
  expires_in: number
}

export type ChatOptions = Record<string, unknown> & {max_tokens?: number; temperature?: number}

/** One model version in a worker's cache (`GET /v1/cache/models`), with the worker that holds it. */
export type CachedModel = CacheEntry & {worker: string}

/** `POST /v1/models/memory`: bytes a launch would need. */
export type MemoryEstimate = MemoryEstimateReply

export interface WaitOptions {
  /** Called with every progress answer (about twice a second). */
  onProgress?: (progress: LaunchProgress) => void
  signal?: AbortSignal
  intervalMs?: number
}

export class Client {
  readonly endpoint: string
  private credential?: string
  private readonly fetch: typeof fetch
  private versionChecked = false

  constructor(
    endpoint: string = DEFAULT_ENDPOINT,
    private readonly options: ClientOptions = {},
  ) {
    this.endpoint = endpoint.replace(/\/+$/, '')
    this.credential = options.apiKey
    this.fetch = options.fetch ?? globalThis.fetch
  }

  /** Logs in with a username and password; the client then sends the access token on every call. */
  async login(username: string, password: string): Promise<AccessToken> {
    const token = await this.request<AccessToken>('POST', '/token', {password, username})
    this.credential = token.access_token
    return token
  }

  /** Revokes the access token this client logged in with (or was given); API keys cannot be logged out. */
  async logout(): Promise<void> {
    await this.request('POST', '/v1/auth/logout')
    this.credential = this.options.apiKey
  }

  /**
   * Launches a model and answers its uid once it is ready; with `{waitReady: false}` the uid comes back at
   * once while the weights download and load (follow it with `progress` or `waitUntilReady`).
   */
  async launch(options: LaunchOptions, {waitReady = true}: {waitReady?: boolean} = {}): Promise<string> {
    const {model_uid: uid} = await this.request<{model_uid: string}>('POST', `/v1/models${waitReady ? '' : '?wait_ready=false'}`, options)
    return uid
  }

  progress(uid: string): Promise<LaunchProgress> {
    return this.request('GET', `/v1/models/${encodeURIComponent(uid)}/progress`)
  }

  /** Cancels a launch in progress; resolves once nothing of it is left. */
  async cancel(uid: string): Promise<void> {
    await this.request('POST', `/v1/models/${encodeURIComponent(uid)}/cancel`)
  }

  /**
   * Polls a launch until it is ready; a failed or cancelled launch becomes a thrown ServiceError. Polls start
   * quick, so a cached model is reported ready at once, and settle at `intervalMs`.
   */
  async waitUntilReady(uid: string, {intervalMs = 500, onProgress, signal}: WaitOptions = {}): Promise<LaunchProgress> {
    for (let poll = 0; ; poll++) {
      const progress = await this.progress(uid)
      onProgress?.(progress)
      if (progress.stage === 'ready') return progress
      if (progress.error) throw new ServiceError(progress.error.status, progress.error.code, progress.error.message)
      await sleep(Math.min(intervalMs, 50 * 2 ** poll), signal)
    }
  }

  async cachedModels(modelName?: string): Promise<CachedModel[]> {
    return (await this.request<{list: CachedModel[]}>('GET', `/v1/cache/models${modelName ? `?model_name=${encodeURIComponent(modelName)}` : ''}`)).list
  }

  cachedModelFiles(version: string): Promise<{model_version: string; paths: string[]}> {
    return this.request('GET', `/v1/cache/models/files?model_version=${encodeURIComponent(version)}`)
  }

  removeCachedModel(version: string): Promise<{model_version: string; paths: string[]}> {
    return this.request('DELETE', `/v1/cache/models?model_version=${encodeURIComponent(version)}`)
  }

  /** The Python environments of engines that run Python, on every worker (admin). */
  async virtualEnvironments(): Promise<Array<VirtualEnvironment & {worker: string}>> {
    return (await this.request<{list: Array<VirtualEnvironment & {worker: string}>}>('GET', '/v1/virtualenvs')).list
  }

  /** Deletes a Python environment; refused while a model uses it (admin). */
  removeVirtualEnvironment(name: string): Promise<{name: string; paths: string[]}> {
    return this.request('DELETE', `/v1/virtualenvs/${encodeURIComponent(name)}`)
  }

  estimateMemory(options: LaunchEstimateRequest): Promise<MemoryEstimate> {
    return this.request('POST', '/v1/models/memory', options)
  }

  async list(): Promise<RunningModel[]> {
    return (await this.request<{data: RunningModel[]}>('GET', '/v1/models')).data
  }

  get(uid: string): Promise<RunningModel> {
    return this.request('GET', `/v1/models/${encodeURIComponent(uid)}`)
  }

  /** A model's events, oldest first: launch, download milestones, ready, crash with its reason, terminate. */
  events(uid: string): Promise<ModelEvent[]> {
    return this.request('GET', `/v1/models/${encodeURIComponent(uid)}/events`)
  }

  /** Past and current launches, newest first, with their outcome (optionally of one model name). */
  history(modelName?: string): Promise<LaunchRecord[]> {
    return this.request('GET', `/v1/launch_history${modelName ? `?model_name=${encodeURIComponent(modelName)}` : ''}`)
  }

  async terminate(uid: string): Promise<void> {
    await this.request('DELETE', `/v1/models/${encodeURIComponent(uid)}`)
  }

  registrations(modelType: string, detailed = false): Promise<Array<Record<string, unknown> & {model_name: string; is_builtin: boolean}>> {
    return this.request('GET', `/v1/model_registrations/${encodeURIComponent(modelType)}${detailed ? '?detailed=true' : ''}`)
  }

  registration(modelType: string, modelName: string): Promise<Record<string, unknown>> {
    return this.request('GET', `/v1/model_registrations/${encodeURIComponent(modelType)}/${encodeURIComponent(modelName)}`)
  }

  async register(modelType: string, family: Record<string, unknown>, persist = true): Promise<void> {
    await this.request('POST', `/v1/model_registrations/${encodeURIComponent(modelType)}`, {model: family, persist})
  }

  async unregister(modelType: string, modelName: string): Promise<void> {
    await this.request('DELETE', `/v1/model_registrations/${encodeURIComponent(modelType)}/${encodeURIComponent(modelName)}`)
  }

  engines(modelName: string): Promise<EngineMatrix> {
    return this.request('GET', `/v1/engines/${encodeURIComponent(modelName)}`)
  }

  /** Every engine the service builds for its machine in the background, each with its state (none on a supervisor). */
  engineBuilds(): Promise<EngineBuildList> {
    return this.request('GET', '/v1/engine-builds')
  }

  /** An engine's background build for the service's machine: state, progress, outcome. */
  engineBuild(engine: string): Promise<EngineBuildStatus> {
    return this.request('GET', `/v1/engines/${encodeURIComponent(engine)}/build`)
  }

  /** The LLM families the vLLM engine can serve, by ability (Xinference's `vllm-models`). */
  vllmModels(): Promise<VllmSupportedModels> {
    return this.request('GET', '/v1/models/vllm-supported')
  }

  /** The cluster's workers (admin): address, state, resources and models. */
  async workers(): Promise<Array<{id: string; address: string | null; state: 'ready' | 'lost'; version: string; models: string[]; resources: Record<string, unknown>; last_seen: number}>> {
    return (await this.request<{list: Awaited<ReturnType<Client['workers']>>}>('GET', '/v1/cluster/workers')).list
  }

  clusterInfo(): Promise<ClusterInfo> {
    return this.request('GET', '/v1/cluster/info')
  }

  /** Stops every worker (and its models), then the supervisor; answers the workers that could not be reached. */
  stopCluster(): Promise<{unreachable_workers: string[]}> {
    return this.request('POST', '/v1/cluster/stop')
  }

  version(): Promise<{version: string}> {
    return this.request('GET', '/v1/cluster/version')
  }

  model(uid: string): ModelClient {
    return new ModelClient(this, uid)
  }

  /** One API call; a non-2xx answer becomes a ServiceError carrying the server's own message. */
  async request<T>(method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<T> {
    const response = await this.send(method, path, body, signal)
    const text = await response.text()
    try {
      return (text ? JSON.parse(text) : null) as T
    } catch {
      throw notTheServiceError(this.endpoint, `${method} ${path}`, response)
    }
  }

  /** Server-sent events of a streaming call, parsed; an error event becomes a thrown ServiceError, its status read back from the error's type. */
  async *stream<T>(path: string, body: unknown, signal?: AbortSignal): AsyncGenerator<T> {
    const response = await this.send('POST', path, body, signal)
    for await (const data of readEventData(await eventStreamBody(this.endpoint, `POST ${path}`, response))) {
      if (data === '[DONE]') return
      const event = JSON.parse(data) as T & {error?: {message: string; code?: string; param?: string | null; type?: string}}
      if (event.error) {
        const {code, message, param, type} = event.error
        // Anthropic's envelope has no code; its type is the machine-readable name it has instead.
        throw new ServiceError(statusOfErrorType(type), code ?? type ?? 'internal_error', message, param)
      }

      yield event as T
    }
  }

  /** One API call whose answer the caller reads itself (audio, text); a non-2xx answer becomes a ServiceError. */
  async send(method: string, path: string, body: unknown, signal?: AbortSignal): Promise<Response> {
    let response: Response
    const started = performance.now()
    try {
      response = await sendJson(this.fetch, `${this.endpoint}${path}`, {body, credential: this.credential, method, signal})
      this.options.trace?.(`${method} ${this.endpoint}${path} → ${response.status} (${(performance.now() - started).toFixed(0)} ms)`)
    } catch (error) {
      // A fetch that throws a ServiceError has said what went wrong already (servicectl's, of a certificate it does not trust).
      if ((error as Error).name === 'AbortError' || error instanceof ServiceError) throw error
      throw new ServiceError(
        503,
        'connection_failed',
        `cannot reach the service at ${this.endpoint} (${((error as Error & {cause?: Error}).cause ?? (error as Error)).message}); start it with \`service-local\`, or point to it with --endpoint or SERVICE_ENDPOINT.`,
      )
    }

    this.checkVersion(response.headers.get(VERSION_HEADER))
    if (!response.ok) {
      const {error} = await errorFromReply(response)
      throw error ?? notTheServiceError(this.endpoint, `${method} ${path}`, response)
    }

    return response
  }

  private checkVersion(serverVersion: string | null) {
    if (this.versionChecked || !serverVersion) return
    this.versionChecked = true
    if (serverVersion === CLIENT_VERSION) return
    const message = `the service at ${this.endpoint} runs version ${serverVersion} but this client is ${CLIENT_VERSION}; upgrade whichever is older so they match.`
    ;(this.options.onVersionMismatch ?? ((m) => console.warn(`Warning: ${m}`)))(message)
  }
}

/** Resolves after `ms`, or rejects with the signal's reason when it is aborted first. */
function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    signal?.throwIfAborted()
    const onAbort = () => {
      clearTimeout(timer)
      reject(signal!.reason)
    }

    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort)
      resolve()
    }, ms)
    signal?.addEventListener('abort', onAbort, {once: true})
  })
}

/** A running model: the calls its type supports (those of the flexible, image and video types in ./media.ts). */
export class ModelClient extends MediaModelCalls<Client> {

  chat(messages: ChatMessage[], options: ChatOptions = {}, signal?: AbortSignal): Promise<ChatCompletion> {
    return this.client.request('POST', '/v1/chat/completions', {...options, messages, model: this.uid, stream: false}, signal)
  }

  chatStream(messages: ChatMessage[], options: ChatOptions = {}, signal?: AbortSignal): AsyncGenerator<ChatCompletionChunk> {
    return this.client.stream('/v1/chat/completions', {...options, messages, model: this.uid, stream: true}, signal)
  }

  generate(prompt: string, options: ChatOptions = {}, signal?: AbortSignal): Promise<Completion> {
    return this.client.request('POST', '/v1/completions', {...options, model: this.uid, prompt, stream: false}, signal)
  }

  generateStream(prompt: string, options: ChatOptions = {}, signal?: AbortSignal): AsyncGenerator<Completion> {
    return this.client.stream('/v1/completions', {...options, model: this.uid, prompt, stream: true}, signal)
  }

  /** One vector per input (`POST /v1/embeddings`), as Xinference's `create_embedding`. */
  createEmbedding(input: EmbeddingInput | EmbeddingInput[], options: EmbeddingOptions = {}, signal?: AbortSignal): Promise<CreateEmbeddingResponse> {
    return this.client.request('POST', '/v1/embeddings', {...options, encoding_format: 'float', input, model: this.uid}, signal)
  }

  /** The documents scored by relevance to the query, best first (`POST /v1/rerank`), as Xinference's `rerank`. */
  rerank(documents: Array<string | {text: string}>, query: string, options: RerankOptions = {}, signal?: AbortSignal): Promise<RerankResponse> {
    return this.client.request('POST', '/v1/rerank', {...options, documents, model: this.uid, query}, signal)
  }

  /**
   * The speech in `audio` as text (`POST /v1/audio/transcriptions`, or `/translations` with `translate`), as
   * Xinference's `transcriptions`: JSON for `json` and `verbose_json`, the text itself for `text`, `srt` and `vtt`.
   */
  async transcribe(audio: Blob, options: TranscriptionOptions = {}, signal?: AbortSignal): Promise<Transcription | string> {
    const {form, path} = transcriptionRequest(this.uid, audio, options)
    return transcriptionReply(await this.client.send('POST', path, form, signal))
  }

  /** `input` spoken by a text2audio model (`POST /v1/audio/speech`), its bytes streamed as they are made. */
  async *speech(input: string, options: SpeechOptions, signal?: AbortSignal): AsyncGenerator<Uint8Array> {
    yield* speechBytes(await this.client.send('POST', '/v1/audio/speech', {...options, input, model: this.uid}, signal))
  }

  describe(): Promise<RunningModel> {
    return this.client.get(this.uid)
  }
}
