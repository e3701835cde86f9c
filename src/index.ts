/**
 * The package's public surface: the typed client for programs, and the contract types plugin authors
 * implement (type-only; plugins receive runtime helpers through the `service:register` hook).
 */
export * from './client/index.js'
// The kernel's contracts have an engine-side MemoryEstimate too; the package's is the client's, the HTTP answer.
export type {MemoryEstimate} from './client/index.js'
export type {FamilySpec, HubSource, ModelFamily, ResolvedSpec} from './kernel/catalogue.js'
export type * from './kernel/contracts.js'
export type * from './kernel/generation.js'
export type * from './kernel/retrieval.js'
export type * from './kernel/audio.js'
export type * from './kernel/operations.js'
export type * from './kernel/flexible.js'
export type * from './kernel/media.js'
export type * from './kernel/uploads.js'
export type {MediaKit, MediaStore} from './kernel/media-kit.js'
export type {ChatImage, ImageReader, ImageSource} from './kernel/image-inputs.js'
export type {LocalPathCheck} from './kernel/model-files.js'
export type * from './kernel/external-engine.js'
export type {PythonEnvironment, PythonRequirements, VirtualEnvSettings} from './kernel/virtualenv.js'
export type {OpenAICompatibleOperations, OpenAICompatibleOptions} from './kernel/openai-upstream.js'
export type {PcmSpeechOperations} from './kernel/pcm-speech-program.js'
export type {JsonLinesCall} from './kernel/json-lines-program.js'
export type {CommandLineFlags, CommandLineFlagsOptions} from './kernel/command-line-flags.js'
export type {ErrorCode} from './kernel/errors.js'
export type {RegisterHook, ServiceHooks} from './kernel/hooks.js'
export type {Permission} from './kernel/permissions.js'
export type {Infer, JsonSchema, Schema} from './kernel/schema.js'
