/**
 * `service-toolkit/client`: the client library on its own. Nothing it imports reaches the server, the cluster,
 * oclif or a `node:` module, so it loads in a browser as in Node without the service's dependencies.
 */
export {Client, DEFAULT_ENDPOINT, ModelClient} from './client.js'
export type {
  AccessToken,
  CachedModel,
  ChatCompletion,
  ChatCompletionChunk,
  ChatContentPart,
  ChatMessage,
  ChatOptions,
  ClientOptions,
  Completion,
  LaunchOptions,
  MemoryEstimate,
  RunningModel,
  WaitOptions,
} from './client.js'
export type {SpeechOptions, Transcription, TranscriptionOptions, TranscriptionSegment} from './audio.js'
export {CLIENT_VERSION} from './version.js'
export {ServiceError} from '../kernel/errors.js'
export type {ErrorCode, ServiceErrorShape} from '../kernel/errors.js'
export type {ClusterInfo} from '../protocol/cluster.js'
export type {LaunchRecord, ModelEvent, ModelEventKind} from '../protocol/events.js'
export type {LaunchProgress, LaunchStage} from '../protocol/launch.js'
export type {CreateEmbeddingResponse, EmbeddingInput, EmbeddingOptions, RerankOptions, RerankResponse} from '../protocol/retrieval.js'
export type {VirtualEnvironment} from '../protocol/virtualenvs.js'
export type {GenerationOptions, ImageOptions, ImagesResponse, OcrResponse, VideoOptions, VideosResponse} from '../protocol/media.js'
