/**
 * The models that should be running, kept under SERVICE_HOME so that a restarted service launches them again:
 * folded from the ServiceEvents seam. A launch that becomes ready is added with its launch request; an operator's
 * terminate removes it; a crash or a failed relaunch keeps it (it is still wanted), with the reason. The file is
 * rewritten whole with write-file-atomic, one write after another, so even a `kill -9` leaves the old list or the new.
 */
import {mkdir, readFile} from 'node:fs/promises'
import {dirname} from 'node:path'
import writeFileAtomic from 'write-file-atomic'

import type {Logger} from '../kernel/contracts.js'
import type {ModelStateChanged, ServiceEvents, UnloadReason} from '../kernel/observability.js'
import type {LaunchRequest} from '../protocol/launch.js'
import {PRIVATE_FILE, PRIVATE_FOLDER} from '../kernel/private-home.js'

export interface DesiredModel {
  /** The launch request as the service received it, with the uid the model got. */
  launch: LaunchRequest & {model_uid: string}
  /** Why the model last failed (a crash, or a relaunch after a restart), when it did; cleared once it is ready. */
  last_error?: {message: string; at: string}
  /** Set when the service unloaded the model (idle, keep_alive 0, evicted): it is not restored at start, but a request launches it on demand. */
  unloaded?: {reason: UnloadReason; at: string}
}

export interface DesiredModelsOptions {
  file: string
  log: Logger
  now?: () => Date
}

export class DesiredModels {
  private readonly models = new Map<string, DesiredModel>()
  /** Launches seen but not ready yet, by uid: added to the list once ready. */
  private readonly launching = new Map<string, DesiredModel['launch']>()
  private writing = Promise.resolve()
  private readonly now: () => Date

  private constructor(private readonly options: DesiredModelsOptions) {
    this.now = options.now ?? (() => new Date())
  }

  /** Reads the file (none, or one that cannot be read, is an empty list: reported, never fatal) and follows the seam. */
  static async open(events: ServiceEvents, options: DesiredModelsOptions): Promise<DesiredModels> {
    const desired = new DesiredModels(options)
    for (const model of await desired.read()) desired.models.set(model.launch.model_uid, model)
    events.on('model', (event) => desired.stateChanged(event))
    return desired
  }

  /** The models to run, in the order they first became ready: not those the service unloaded. */
  list(): DesiredModel[] {
    return [...this.models.values()].filter((model) => !model.unloaded).map((model) => structuredClone(model))
  }

  /** A model the service knows how to launch again (running, failed or unloaded), by uid. */
  known(uid: string): DesiredModel | undefined {
    const model = this.models.get(uid)
    return model && structuredClone(model)
  }

  /** Settles once every change so far is on disk. */
  async flush(): Promise<void> {
    await this.writing
  }

  /** Adds (or replaces) a model to launch again after a restart, before its launch has become ready (Xinference's autostart). */
  add(launch: DesiredModel['launch']): void {
    this.models.set(launch.model_uid, {launch: structuredClone(launch)})
    this.save()
  }

  /** Stops restoring a model (it keeps running): whether it was in the list. */
  remove(uid: string): boolean {
    this.launching.delete(uid)
    if (!this.models.delete(uid)) return false
    this.save()
    return true
  }

  /** Keeps why a model could not be launched again, for a failure the seam does not report (one before its launch began). */
  failed(uid: string, message: string): void {
    const model = this.models.get(uid)
    if (!model) return
    model.last_error = {at: this.now().toISOString(), message}
    this.save()
  }

  private stateChanged({launch, reason, state, uid, unload}: ModelStateChanged): void {
    if (state === 'launching') {
      if (launch) this.launching.set(uid, {...(launch as LaunchRequest), model_uid: uid})
      return
    }

    const launched = this.launching.get(uid)
    this.launching.delete(uid)
    if (state === 'ready' && launched) this.models.set(uid, {launch: launched})
    else if (state === 'error') return this.failed(uid, reason ?? 'failed')
    else if (state === 'terminated' && unload && this.models.has(uid)) this.models.get(uid)!.unloaded = {at: this.now().toISOString(), reason: unload}
    // A terminate with no reason is an operator's; one with a reason is a cancelled launch (the service stopping among them).
    else if (!(state === 'terminated' && !reason && this.models.delete(uid))) return
    this.save()
  }

  private save(): void {
    const {file, log} = this.options
    const content = `${JSON.stringify({models: [...this.models.values()], version: 1}, null, 2)}\n`
    this.writing = this.writing
      .then(async () => {
        await mkdir(dirname(file), {mode: PRIVATE_FOLDER, recursive: true})
        await writeFileAtomic(file, content, {mode: PRIVATE_FILE})
      })
      .catch((error) => log.error(`could not write the desired models to ${file}: ${(error as Error).message}`))
  }

  private async read(): Promise<DesiredModel[]> {
    const {file, log} = this.options
    let text: string
    try {
      text = await readFile(file, 'utf8')
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') log.warn(`could not read the desired models in ${file}: ${(error as Error).message}; none are restored`)
      return []
    }

    try {
      const {models} = JSON.parse(text) as {models?: unknown}
      if (!Array.isArray(models) || !models.every((model) => typeof model?.launch?.model_uid === 'string' && typeof model.launch.model_name === 'string'))
        throw new Error('it does not hold a list of launches')
      return models as DesiredModel[]
    } catch (error) {
      log.warn(`ignoring the desired models in ${file}, which cannot be used: ${(error as Error).message}`)
      return []
    }
  }
}

/**
 * Launches the desired models again, one after another (so they do not contend for memory), until `signal` says the
 * service is stopping. A launch that fails is logged, and its reason kept in the list.
 */
export async function restoreDesiredModels(desired: DesiredModels, launch: (request: LaunchRequest) => Promise<unknown>, {log, signal}: {log: Logger; signal: AbortSignal}): Promise<void> {
  const models = desired.list()
  if (models.length > 0) log.info(`restoring ${models.length} desired model(s): ${models.map((model) => model.launch.model_uid).join(', ')}`)
  for (const model of models) {
    if (signal.aborted) return
    try {
      await launch(model.launch)
      log.info(`restored ${model.launch.model_uid}`)
    } catch (error) {
      log.error(`could not restore ${model.launch.model_uid}: ${(error as Error).message}`)
      desired.failed(model.launch.model_uid, (error as Error).message)
    }
  }
}
