/**
 * The package's public surface: the typed client for programs, and the contract types plugin authors
 * implement (type-only; plugins receive runtime helpers through the `service:register` hook).
 */
export {Client, CLIENT_VERSION, DEFAULT_ENDPOINT, ModelClient} from './client/client.js'
export type {
  AccessToken,
  CachedModel,
  ChatCompletion,
  ChatCompletionChunk,
  ChatMessage,
  ChatOptions,
  ClientOptions,
  Completion,
  LaunchOptions,
  LaunchProgress,
  LaunchStage,
  MemoryEstimate,
  RunningModel,
  WaitOptions,
} from './client/client.js'
export type {FamilySpec, HubSource, ModelFamily, ResolvedSpec} from './kernel/catalogue.js'
export type * from './kernel/contracts.js'
export {ServiceError} from './kernel/errors.js'
export type {ErrorCode, ServiceErrorShape} from './kernel/errors.js'
export type * from './kernel/generation.js'
export type * from './kernel/retrieval.js'
export type {RegisterHook, ServiceHooks} from './kernel/hooks.js'
export type {Permission} from './kernel/permissions.js'
export type {Infer, JsonSchema, Schema} from './kernel/schema.js'
