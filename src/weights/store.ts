/**
 * Where a spec's weights live on this worker, fetching them once when they are not there yet: a local file
 * named by `model_uri` (checked as at registration), else the model version's folder in the cache, filled from
 * the spec's hub, or made here by the engine plugin's generator when the spec's hub is `generated` (see
 * generated-weights.ts).
 *
 * A cached model is found on the local disk alone, so its launch makes no network request. Launches of the
 * same model version at the same time follow one shared download; it is stopped (and leaves nothing behind)
 * only when every launch following it has been cancelled. A download needing more disk than is free is
 * refused before it starts. A download that fails on the network keeps its `.part` files, so the next launch
 * resumes; one that is cancelled, refused by the hub or found corrupt leaves nothing.
 */
import {existsSync} from 'node:fs'
import {stat, statfs} from 'node:fs/promises'
import {dirname} from 'node:path'
import {setTimeout as sleep} from 'node:timers/promises'

import type {ModelFamily, ResolvedSpec} from '../kernel/catalogue.js'
import type {Logger, LoadRequest, WeightsGenerator} from '../kernel/contracts.js'
import type {DownloadFinished, ServiceEvents} from '../kernel/observability.js'
import type {DownloadProgress, WeightsSource} from '../protocol/worker.js'

import {GENERATED_HUB, specFileNames} from '../kernel/catalogue.js'
import {badRequest, ServiceError} from '../kernel/errors.js'
import {checkModelUri} from '../kernel/model-files.js'
import {formatBytes} from '../util/format.js'
import {generateIntoCache, type PythonEnvironmentMaker} from './generated-weights.js'
import {cacheEntryName, type CacheManifest, ModelCache} from './cache.js'
import {createHub, type Hub, type RemoteFile, type RepoSnapshot} from './hubs.js'
import {isPipelineSpec, pipelineVariant, type PipelineVariant, selectPipelineFiles} from './pipeline.js'
import {indexedShards, isRepositorySpec, repositoryFiles, SAFETENSORS_INDEX} from './repository.js'
import {downloadFile, partPath} from './transfer.js'

/** The cache folder a launch's weights are in: a diffusers pipeline's by the weight variant its family asks for too. */
export const weightsVersion = ({family, modelName, spec}: SpecRequest) => cacheEntryName(modelName, spec, isPipelineSpec(spec) ? pipelineVariant(family)?.name : undefined)

export interface ResolveOptions {
  signal?: AbortSignal
  onProgress?(progress: DownloadProgress): void
  /** Told when the weights are about to be made here (a `generated` spec that is not cached yet). */
  onGenerating?(): void
  /** Makes or reuses the virtual environment of a generator that runs Python (`WeightsGenerator.python`). */
  python?: PythonEnvironmentMaker
}

/** Where the weights of a spec can be read: local files, or the hub's URLs (with the headers they need). */
export interface WeightsLocation {
  source: WeightsSource
  files: string[]
  headers: Record<string, string>
  /** Each file's bytes as the hub's metadata lists them, for files on a hub. */
  sizes?: number[]
}

export interface WeightStoreOptions {
  cacheDir: string
  log: Logger
  /** Hub endpoints, tokens and download tuning are read from here (default: process.env). */
  env?: NodeJS.ProcessEnv
  fetch?: typeof fetch
  /** Folders a `file://` model_uri must resolve into (SERVICE_ALLOWED_MODEL_DIRS); empty: anywhere. */
  allowedModelDirs?: readonly string[]
  /** Bytes free on the disk holding `dir` (default: statfs). */
  freeBytes?: (dir: string) => Promise<number>
  /** The installed generator of a model format's weights, for specs whose hub is `generated`. */
  /** The generator of a format's files that knows a recipe (a generated spec's `model_id`). */
  weightsGenerator?: (format: string, recipe: string) => WeightsGenerator | undefined
  /** Where each download's end is reported (metrics subscribe); none in a worker of a cluster. */
  events?: ServiceEvents
}

/** `family` is read for a diffusers pipeline's weight variant (its default_model_config). */
type SpecRequest = Pick<LoadRequest, 'modelName' | 'spec'> & {family?: ModelFamily}

interface Follower {
  onProgress?(progress: DownloadProgress): void
}

interface DownloadJob {
  controller: AbortController
  followers: Set<Follower>
  progress?: DownloadProgress
  /** The bytes the cache already had when the download began (from an earlier, interrupted one). */
  presentBytes?: number
  /** Settles once the download is complete, or has failed and been cleaned up. */
  done: Promise<void>
}

const cancelled = (modelName: string) => new ServiceError(499, 'request_aborted', `the launch of ${modelName} was cancelled while its weights were downloading; nothing was kept.`)
const number = (value: string | undefined, fallback: number) => (value !== undefined && value.trim() !== '' && Number.isFinite(Number(value)) ? Number(value) : fallback)

async function sizeOf(path: string): Promise<number> {
  try {
    return (await stat(path)).size
  } catch {
    return 0
  }
}

async function statfsFree(dir: string): Promise<number> {
  let existing = dir
  while (!existsSync(existing) && dirname(existing) !== existing) existing = dirname(existing)
  const info = await statfs(existing)
  return info.bavail * info.bsize
}

/** Failures that a later attempt can get past; their partial files are worth keeping for it. */
const resumable = (error: unknown) => ['download_failed', 'hub_unreachable', 'hub_busy'].includes((error as ServiceError)?.code)

export class WeightStore {
  readonly cache: ModelCache
  private readonly jobs = new Map<string, DownloadJob>()
  private readonly env: NodeJS.ProcessEnv

  constructor(private readonly options: WeightStoreOptions) {
    this.cache = new ModelCache(options.cacheDir)
    this.env = options.env ?? process.env
  }

  /** The local path of the spec's entry file (for split GGUF, the first part), downloading what is missing. */
  async resolve({family, modelName, spec}: SpecRequest, {onGenerating, onProgress, python, signal}: ResolveOptions = {}): Promise<string> {
    const local = await this.localFile(spec)
    if (local) return local
    const {names, version} = this.entryOf(modelName, spec, family)
    const repository = isRepositorySpec(spec)
    if (!(await (repository ? this.cache.complete(version) : this.cache.has(version, names)))) {
      if (signal?.aborted) throw cancelled(modelName)
      if (spec.model_hub === GENERATED_HUB) onGenerating?.()
      const current = this.jobs.get(version)
      // One winding down from its last follower's cancel is let go of first, then the cache looked at again.
      if (current?.controller.signal.aborted) return current.done.catch(() => {}).then(() => this.resolve({family, modelName, spec}, {onGenerating, onProgress, python, signal}))
      const job = current ?? this.start(version, modelName, spec, names, python, pipelineVariant(family))
      await this.follow(job, modelName, {onProgress, signal})
    }

    // A repository is loaded as its folder (config, tokenizer and shards side by side), a GGUF model from its first file.
    return repository ? this.cache.entryDir(version) : this.cache.filePath(version, names[0])
  }

  /** Where a spec's weights can be read without downloading them (for memory estimates from the header). */
  async locate({family, modelName, spec}: SpecRequest, signal?: AbortSignal): Promise<WeightsLocation> {
    const local = await this.localFile(spec)
    if (local) return {files: [local], headers: {}, source: 'local'}
    const {names, version} = this.entryOf(modelName, spec, family)
    if (await this.cache.has(version, names)) return {files: names.map((name) => this.cache.filePath(version, name)), headers: {}, source: 'cache'}
    if (spec.model_hub === GENERATED_HUB) {
      await this.resolve({modelName, spec}, {signal})
      return {files: names.map((name) => this.cache.filePath(version, name)), headers: {}, source: 'generated'}
    }

    const hub = this.hub(spec)
    const snapshot = await this.snapshot(hub, spec, signal)
    const files = this.remoteFiles(hub, snapshot, names)
    return {files: files.map((file) => hub.fileUrl(snapshot, file.path)), headers: hub.headers, sizes: files.map((file) => file.size), source: hub.name}
  }

  /** Whether a launch is downloading this model version right now. */
  downloading(version: string): boolean {
    return this.jobs.has(version)
  }

  /** A registration's local file, checked again: it may have changed since it was registered. */
  private async localFile(spec: ResolvedSpec): Promise<string | undefined> {
    if (!spec.model_uri) return undefined
    return checkModelUri(spec.model_uri, {allowedDirs: this.options.allowedModelDirs, format: spec.model_format, param: 'model_uri'})
  }

  private entryOf(modelName: string, spec: ResolvedSpec, family?: ModelFamily) {
    const names = specFileNames(spec)
    if (names.length === 0 && !isRepositorySpec(spec))
      throw badRequest(`${modelName} names no weight file for ${spec.quantization}; its registration needs model_file_name_template or model_uri.`, 'model_name')
    const version = weightsVersion({family, modelName, spec})
    for (const name of names) this.cache.filePath(version, name)
    return {names, version}
  }

  private hub(spec: ResolvedSpec): Hub {
    if (!spec.model_id) throw badRequest(`the ${spec.model_hub} source of this model names no model_id (repo) to download from.`, 'model_name')
    return createHub(spec.model_hub, this.env, {fetch: this.options.fetch, timeoutMs: this.tuning.stallTimeoutMs})
  }

  private get tuning() {
    return {
      maxAttempts: Math.max(1, number(this.env.SERVICE_DOWNLOAD_MAX_ATTEMPTS, 5)),
      retryDelayMs: number(this.env.SERVICE_DOWNLOAD_RETRY_DELAY_MS, 1000),
      stallTimeoutMs: number(this.env.SERVICE_DOWNLOAD_TIMEOUT, 30) * 1000,
    }
  }

  /** The file list, retried while the hub answers that it is busy. */
  private async snapshot(hub: Hub, spec: ResolvedSpec, signal?: AbortSignal): Promise<RepoSnapshot> {
    const {maxAttempts, retryDelayMs} = this.tuning
    for (let attempt = 1; ; attempt++) {
      try {
        return await hub.snapshot(spec.model_id!, spec.model_revision ?? hub.defaultRevision, signal)
      } catch (error) {
        if ((error as ServiceError).code !== 'hub_busy' || attempt >= maxAttempts) throw error
        this.options.log.warn(`${(error as Error).message} (attempt ${attempt} of ${maxAttempts})`)
        await sleep(Math.min(30_000, retryDelayMs * 2 ** (attempt - 1)), undefined, {signal})
      }
    }
  }

  private remoteFiles(hub: Hub, snapshot: RepoSnapshot, names: string[]): RemoteFile[] {
    return names.map((name) => {
      const file = snapshot.files.get(name)
      if (file) return file
      const ggufs = [...snapshot.files.keys()].filter((path) => path.endsWith('.gguf'))
      throw new ServiceError(
        502,
        'hub_not_found',
        `repo or file not found on ${hub.name}: ${hub.fileUrl(snapshot, name)} (the repo ${snapshot.repo} at ${snapshot.revision} has no ${name}${ggufs.length > 0 ? `; its GGUF files are: ${ggufs.slice(0, 12).join(', ')}${ggufs.length > 12 ? ', …' : ''}` : ''}).`,
      )
    })
  }

  private start(version: string, modelName: string, spec: ResolvedSpec, names: string[], python?: PythonEnvironmentMaker, variant?: PipelineVariant): DownloadJob {
    const job: DownloadJob = {controller: new AbortController(), done: Promise.resolve(), followers: new Set()}
    const fill =
      spec.model_hub === GENERATED_HUB
        ? generateIntoCache({cache: this.cache, generator: this.options.weightsGenerator?.(spec.model_format, spec.model_id ?? ''), log: this.options.log, modelName, names, python, signal: job.controller.signal, spec, version})
        : this.reportDownload(job, modelName, spec, this.download(job, version, modelName, spec, names, variant))
    job.done = fill.finally(() => this.jobs.delete(version))
    // Followers observe the outcome; this keeps an unobserved failure from being reported as unhandled.
    job.done.catch(() => {})
    this.jobs.set(version, job)
    return job
  }

  /** Waits for a shared download; leaving it stops the download only when nobody else follows it. */
  private follow(job: DownloadJob, modelName: string, {onProgress, signal}: ResolveOptions): Promise<void> {
    return new Promise((resolve, reject) => {
      const follower: Follower = {onProgress}
      let settled = false
      const settle = (error?: unknown) => {
        if (settled) return
        settled = true
        job.followers.delete(follower)
        signal?.removeEventListener('abort', leave)
        if (error) reject(error)
        else resolve()
      }

      const leave = () => {
        job.followers.delete(follower)
        if (job.followers.size > 0) return settle(cancelled(modelName))
        job.controller.abort()
        void job.done.then(
          () => settle(cancelled(modelName)),
          () => settle(cancelled(modelName)),
        )
      }

      job.followers.add(follower)
      if (job.progress) onProgress?.(job.progress)
      signal?.addEventListener('abort', leave, {once: true})
      job.done.then(
        () => settle(),
        (error) => settle(error),
      )
    })
  }

  /** Reports a download on the service's events once it has ended, with the bytes it fetched and how it ended. */
  private async reportDownload(job: DownloadJob, modelName: string, spec: ResolvedSpec, download: Promise<void>): Promise<void> {
    const started = performance.now()
    const report = (outcome: DownloadFinished['outcome'], reason?: string) =>
      this.options.events?.report('download', {
        bytes: (job.progress?.downloadedBytes ?? 0) - (job.presentBytes ?? 0),
        durationMs: performance.now() - started,
        hub: job.progress?.hub ?? spec.model_hub,
        modelName,
        outcome,
        ...(reason === undefined ? {} : {reason}),
      })
    try {
      await download
      report('completed')
    } catch (error) {
      report(job.controller.signal.aborted ? 'cancelled' : 'failed', (error as Error)?.message)
      throw error
    }
  }

  /**
   * The files of a whole repository (see repository.ts) or of a diffusers pipeline (see pipeline.ts); the small files
   * that say which weights to take (an index) are fetched first, and `fetched` is told of them so that a failure cleans
   * them up too.
   */
  private async repositoryFiles(hub: Hub, snapshot: RepoSnapshot, version: string, signal: AbortSignal, fetched: string[], spec: ResolvedSpec, variant?: PipelineVariant): Promise<RemoteFile[]> {
    const fetchSmall = async (file: RemoteFile) => {
      fetched.push(file.path)
      await this.transfer(hub, snapshot, file, version, signal, () => {})
      return this.cache.filePath(version, file.path)
    }

    if (isPipelineSpec(spec)) return selectPipelineFiles(snapshot, variant, fetchSmall)
    const index = snapshot.files.get(SAFETENSORS_INDEX)
    if (!index) return repositoryFiles(snapshot)
    return repositoryFiles(snapshot, await indexedShards(await fetchSmall(index), snapshot.repo))
  }

  private transfer(hub: Hub, snapshot: RepoSnapshot, file: RemoteFile, version: string, signal: AbortSignal, onBytes: (bytes: number) => void): Promise<void> {
    return downloadFile({
      ...this.tuning,
      fetch: this.options.fetch,
      hub,
      log: this.options.log,
      onBytes,
      sha256: file.sha256,
      signal,
      size: file.size,
      target: this.cache.filePath(version, file.path),
      url: hub.fileUrl(snapshot, file.path),
    })
  }

  private async download(job: DownloadJob, version: string, modelName: string, spec: ResolvedSpec, names: string[], variant?: PipelineVariant): Promise<void> {
    const fetched: string[] = []
    try {
      await this.fetchAll(job, version, modelName, spec, names, fetched, variant)
    } catch (error) {
      if (job.controller.signal.aborted || !resumable(error)) await this.cache.discard(version, fetched)
      throw error
    }
  }

  /**
   * `names` are the spec's files, or none for a whole repository. `fetched` gathers what a failure must clean up: the
   * files being transferred (a refusal before the transfers begins keeps an earlier download's `.part` files).
   */
  private async fetchAll(job: DownloadJob, version: string, modelName: string, spec: ResolvedSpec, names: string[], fetched: string[], variant?: PipelineVariant): Promise<void> {
    const {log} = this.options
    const {signal} = job.controller
    const hub = this.hub(spec)
    const snapshot = await this.snapshot(hub, spec, signal)
    const remote = names.length > 0 ? this.remoteFiles(hub, snapshot, names) : await this.repositoryFiles(hub, snapshot, version, signal, fetched, spec, variant)
    const present = await Promise.all(
      remote.map(async (file) => {
        const target = this.cache.filePath(version, file.path)
        const done = await sizeOf(target)
        return done === file.size ? done : Math.min(await sizeOf(partPath(target)), file.size)
      }),
    )
    const total = remote.reduce((sum, file) => sum + file.size, 0)
    const needed = total - present.reduce((sum, bytes) => sum + bytes, 0)
    job.presentBytes = total - needed
    const free = await (this.options.freeBytes ?? statfsFree)(this.cache.entryDir(version))
    if (needed > free)
      throw new ServiceError(
        507,
        'insufficient_storage',
        `not enough disk space to download ${modelName} (${version}): it needs ${formatBytes(needed)} more, and ${formatBytes(free)} is free at ${this.cache.root}. Free some space (servicectl remove-cache) or set SERVICE_HOME to a larger disk.`,
      )

    const progress: DownloadProgress = {
      downloadedBytes: 0,
      files: remote.map((file, index) => ({downloadedBytes: present[index], name: file.path, totalBytes: file.size})),
      hub: hub.name,
      repo: snapshot.repo,
      totalBytes: total,
    }
    const publish = () => {
      progress.downloadedBytes = progress.files.reduce((sum, file) => sum + file.downloadedBytes, 0)
      job.progress = {...progress, files: progress.files.map((file) => ({...file}))}
      for (const follower of job.followers) follower.onProgress?.(job.progress)
    }

    publish()
    log.info(`downloading ${modelName} (${version}) from ${hub.name} ${snapshot.repo}@${snapshot.commit ?? snapshot.revision}: ${remote.map((f) => f.path).join(', ')} (${formatBytes(total)}, ${formatBytes(needed)} to fetch)`)
    const started = performance.now()
    fetched.splice(0, fetched.length, ...remote.map((file) => file.path))
    for (const [index, file] of remote.entries()) {
      if (present[index] === file.size && (await sizeOf(this.cache.filePath(version, file.path))) === file.size) continue
      await this.transfer(hub, snapshot, file, version, signal, (bytes) => {
        progress.files[index].downloadedBytes = bytes
        publish()
      })
    }

    const manifest: CacheManifest = {
      commit: snapshot.commit,
      downloaded_at: new Date().toISOString(),
      files: remote.map((file) => ({name: file.path, sha256: file.sha256, size: file.size, url: hub.fileUrl(snapshot, file.path)})),
      hub: hub.name,
      model_format: spec.model_format,
      model_name: modelName,
      model_size_in_billions: spec.model_size_in_billions,
      model_version: version,
      quantization: spec.quantization,
      repo: snapshot.repo,
      revision: snapshot.revision,
    }
    await this.cache.writeManifest(manifest)

    const seconds = (performance.now() - started) / 1000
    log.info(`downloaded ${modelName} (${version}): ${formatBytes(needed)} in ${seconds.toFixed(1)} s (${formatBytes(needed / Math.max(seconds, 0.001))}/s)`)
  }
}
