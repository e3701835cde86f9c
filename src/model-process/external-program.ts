/**
 * The worker's side of a model instance served by an external engine's program (see kernel/external-engine.ts), the
 * counterpart of InstanceProcess for Node engines, with the same states and the same answers: the launch waits for
 * the program's health check and fails saying so if it exits or never becomes healthy first; a program that dies
 * after it was ready fails every request in flight and later ones with a 503 saying why. Neither quotes the program's
 * output, which is the model's log's (failure-cause.ts). A stop is SIGTERM, a grace period, then SIGKILL.
 */
import {open, stat} from 'node:fs/promises'
import {delimiter} from 'node:path'
import {setTimeout as delay} from 'node:timers/promises'

import type {LoadedModelInfo, LoadRequest} from '../kernel/contracts.js'
import type {ExternalEngine, ExternalLaunchContext} from '../kernel/external-engine.js'
import type {PythonEnvironment} from '../kernel/virtualenv.js'
import type {InstanceState} from '../protocol/worker.js'

import {gpuEnvironment} from '../kernel/devices.js'
import {ServiceError, toServiceError} from '../kernel/errors.js'
import {joinGenerationEvents} from '../kernel/generation.js'
import {relayedOperation, type ServedModel} from '../kernel/reasoning.js'
import {toolCallFormatOf} from '../kernel/tool-call-format.js'
import {outputIsInLog, PORT_TAKEN, recognisedCause} from './failure-cause.js'
import {listenerIsInGroup} from './listener-owner.js'
import {pacedEvents} from './paced-events.js'
import {programSpawner, type RunningProgram, type SpawnProgram} from './program-spawner.js'

export interface ExternalProgramOptions {
  logFile: string
  /** Environment the program starts with, beyond the service's own (the engine's command may add more). */
  env?: Record<string, string>
  /** The virtual environment made for the engine's Python packages, given to its command. */
  python?: PythonEnvironment
  spawn?: SpawnProgram
  /** Finds a free port; get-port's unless given. */
  freePort?: () => Promise<number>
  /**
   * Whether the socket listening on `port` is process group `group`'s (undefined: cannot tell). From /proc unless given;
   * not asked where `spawn` is given and this is not, as such a program need not be a process of this machine.
   */
  listenerInGroup?: (port: number, group: number) => Promise<boolean | undefined>
  /**
   * Paces each request's events as a model process does (see pacedEvents): its first token at once, later ones
   * joined while the next is due within this many milliseconds. Unless given, every event goes on as it comes.
   */
  streamIntervalMs?: number
}

const HOST = '127.0.0.1'
const DEFAULT_INTERVAL_MS = 250
const DEFAULT_STOP_GRACE_MS = 10_000
/** How long a request whose connection broke waits to learn whether the program died, to answer with why. */
const EXIT_NOTICE_MS = 2000
/** The most of a failed start's output an engine's `startFailure` reads: the end, where a traceback is. */
const START_OUTPUT_BYTES = 256 * 1024
/**
 * Ports tried before a launch gives up: a free port is only free when it is picked, and another process may bind it
 * before the program does. get-port keeps a port it handed out from this service's later launches; a program that
 * still finds its port taken exits saying so, and is started again on a fresh one. So is a program whose health check
 * was answered by another process's socket (listener-owner.ts): another service's program on the same free port.
 */
const PORT_ATTEMPTS = 3

/** Waits `ms`, or less when `signal` aborts first; never throws. */
const sleep = (ms: number, signal?: AbortSignal) => delay(ms, undefined, {signal}).catch(() => {})

async function getFreePort(): Promise<number> {
  const {default: getPort} = await import('get-port')
  return getPort({host: HOST})
}

export class ExternalProgram {
  state: InstanceState = 'loading'
  info: LoadedModelInfo = {}
  readonly operations: string[]
  /** Why the program is gone, once it is. */
  failure?: ServiceError
  private program?: RunningProgram
  private port = 0
  private request?: LoadRequest & ServedModel
  /** How the program ended (`exited with code 1`), once it has. */
  private exitHow = 'exited'
  /** Aborted when the program dies, ending the requests in flight; a fresh one for each start. */
  private gone = new AbortController()
  /** Set when another process answered this start's health check on the program's port. */
  private portAnsweredByAnother = false

  constructor(
    readonly uid: string,
    private readonly engine: ExternalEngine,
    private readonly options: ExternalProgramOptions,
    /** `report`: the crash for the service's log, with every line of output kept, those about requests included. */
    private readonly onCrash: (error: ServiceError, report: string) => void = () => {},
  ) {
    this.operations = Object.keys(engine.operations)
  }

  get pid(): number | undefined {
    return this.program?.pid
  }

  private get baseUrl(): string {
    return `http://${HOST}:${this.port}`
  }

  /** Starts the program and resolves once it answers its health check; again on a fresh port if its port was taken. */
  async load(request: LoadRequest, signal?: AbortSignal, onProgress?: (fraction: number) => void): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.start(request, signal, onProgress)
      } catch (error) {
        const portTaken = this.portAnsweredByAnother || (this.state === 'crashed' && this.program?.outputTail().some((line) => PORT_TAKEN.test(line)))
        if (this.portAnsweredByAnother) await this.dispose(0)
        if (!portTaken || attempt === PORT_ATTEMPTS || signal?.aborted) throw error
        this.state = 'loading'
        this.failure = undefined
        this.portAnsweredByAnother = false
        this.gone = new AbortController()
      }
    }
  }

  private async start(request: LoadRequest, signal?: AbortSignal, onProgress?: (fraction: number) => void): Promise<void> {
    this.port = await (this.options.freePort ?? getFreePort)()
    const {python} = this.options
    // As `source bin/activate` would: what the program runs by name (python, its console scripts) is the environment's.
    const activated: Record<string, string> = python ? {PATH: [python.binDir, this.options.env?.PATH ?? process.env.PATH].filter(Boolean).join(delimiter), VIRTUAL_ENV: python.envDir} : {}
    const env: Record<string, string> = {...this.options.env, ...activated, ...gpuEnvironment(request.devices)}
    const context: ExternalLaunchContext = {baseUrl: this.baseUrl, devices: request.devices ?? [], env, port: this.port, ...(python ? {python} : {})}
    const command = await this.engine.command(request, context)
    const spawn = this.options.spawn ?? (await programSpawner())
    if (signal?.aborted || this.state !== 'loading') throw this.cancelled()
    const logStart = await stat(this.options.logFile).then((stats) => stats.size, () => 0)
    this.program = spawn({args: command.args, cwd: command.cwd, env: {...env, ...command.env}, file: command.file, logFile: this.options.logFile})
    const program = this.program
    void program.exited.then((exit) => program === this.program && this.exited(exit))
    onProgress?.(0)
    await this.waitUntilHealthy(command.file, signal).catch(async (error: unknown) => {
      throw this.state === 'crashed' ? await this.startFailure(error as ServiceError, logStart) : error
    })
    // The program may have exited, or the launch been cancelled, since it last answered: a dead model is never ready.
    if (this.state !== 'loading') throw this.cancelled()
    this.info = this.engine.info?.(request) ?? {}
    // Read once here, not per request: the template files beside the weights say how the model writes tool calls.
    this.request = request.modelType === 'LLM' ? {...request, toolCallFormat: toolCallFormatOf(request)} : request
    this.state = 'ready'
    onProgress?.(1)
  }

  /** One operation as a stream of events; aborting the signal (or the program dying) ends the upstream request. */
  async *invoke(operation: string, payload: unknown, signal: AbortSignal): AsyncGenerator<unknown> {
    if (this.state !== 'ready') throw this.notServing()
    const run = this.engine.operations[operation]
    if (!run) throw new ServiceError(400, 'unsupported', `this model does not support "${operation}"`)
    const stop = new AbortController()
    try {
      const {streamIntervalMs} = this.options
      const endpoint = {baseUrl: this.baseUrl, modelUid: this.uid, port: this.port, readIntervalMs: streamIntervalMs, signal: AbortSignal.any([signal, this.gone.signal, stop.signal])}
      // The route that sent the payload was checked against the model type's operations; here it is only forwarded.
      const events = relayedOperation(this.request!, operation, payload, (relayed) => run(relayed as never, endpoint))
      yield* streamIntervalMs === undefined ? events : pacedEvents(events, streamIntervalMs, joinGenerationEvents)
    } catch (error) {
      throw await this.explain(error, signal)
    } finally {
      // A consumer that stops early (client disconnect) must end the upstream request too.
      stop.abort()
    }
  }

  /** Asks the program to exit (SIGTERM to its process group); kills it if it has not within the grace period. */
  async dispose(graceMs = this.engine.stopGraceMs ?? DEFAULT_STOP_GRACE_MS): Promise<void> {
    if (this.state === 'disposed') return
    this.state = 'disposing'
    const program = this.program
    if (!program) {
      this.state = 'disposed'
      return
    }

    program.kill('SIGTERM')
    const timer = setTimeout(() => program.kill('SIGKILL'), graceMs)
    await program.exited
    clearTimeout(timer)
  }

  private async waitUntilHealthy(file: string, signal?: AbortSignal): Promise<void> {
    const {intervalMs = DEFAULT_INTERVAL_MS, path, timeoutMs} = this.engine.health
    const deadline = AbortSignal.timeout(timeoutMs)
    const waiting = AbortSignal.any([deadline, this.gone.signal, ...(signal ? [signal] : [])])
    while (!waiting.aborted) {
      let answered = false
      try {
        const response = await fetch(`${this.baseUrl}${path}`, {signal: AbortSignal.any([waiting, AbortSignal.timeout(Math.max(intervalMs, 1000))])})
        await response.body?.cancel()
        answered = response.ok
      } catch {
        // Not listening yet.
      }

      if (answered && this.state === 'loading') {
        if (await this.listenerIsOurs()) return
        this.portAnsweredByAnother = true
        throw new ServiceError(500, 'launch_failed', `model ${this.uid}'s port ${this.port} was taken by another process, which answered its health check; ${PORT_ATTEMPTS} ports were tried.`)
      }

      await sleep(intervalMs, waiting)
    }

    if (signal?.aborted || this.state !== 'loading') throw this.cancelled()
    if (this.failure) throw this.failure
    throw new ServiceError(500, 'launch_failed', `model ${this.uid}'s program (${file}) did not answer GET ${path} with success within ${timeoutMs / 1000} s; ${outputIsInLog(this.uid)}.`)
  }

  /** False only when the socket on the program's port is known to be another process's (not the program's group's). */
  private async listenerIsOurs(): Promise<boolean> {
    const group = this.program?.pid
    const {listenerInGroup = this.options.spawn ? undefined : listenerIsInGroup} = this.options
    return group === undefined || !listenerInGroup || (await listenerInGroup(this.port, group)) !== false
  }

  /** A start that failed, with the engine's reason from the program's output since `logStart` when it recognises one. */
  private async startFailure(error: ServiceError, logStart: number): Promise<ServiceError> {
    if (!this.engine.startFailure) return error
    const file = await open(this.options.logFile).catch(() => undefined)
    if (!file) return error
    try {
      const {size} = await file.stat()
      const from = Math.max(logStart, size - START_OUTPUT_BYTES)
      const {buffer, bytesRead} = await file.read({buffer: Buffer.alloc(Math.max(0, size - from)), position: from})
      const cause = this.engine.startFailure(buffer.subarray(0, bytesRead).toString('utf8'))
      if (!cause) return error
      this.failure = new ServiceError(500, 'launch_failed', `model ${this.uid}'s program ${this.exitHow} before it was ready: ${cause}; its output is in ${this.options.logFile}.`)
      return this.failure
    } finally {
      await file.close()
    }
  }

  private cancelled(): ServiceError {
    return this.failure ?? new ServiceError(499, 'request_aborted', `the launch of ${this.uid} was cancelled while its program was starting.`)
  }

  /** A request's failure as the client should read it: the program's crash when that is what broke it. */
  private async explain(error: unknown, signal: AbortSignal): Promise<ServiceError> {
    if (error instanceof ServiceError) return error
    if (!signal.aborted && this.program && this.state === 'ready') await Promise.race([this.program.exited, sleep(EXIT_NOTICE_MS)])
    if (signal.aborted) return new ServiceError(499, 'request_aborted', 'the request was cancelled.')
    if (this.state !== 'ready') return this.notServing()
    const shaped = toServiceError(error)
    return shaped.status === 500 ? new ServiceError(502, 'internal_error', `model ${this.uid}'s program failed the request: ${(error as Error)?.message ?? error}`) : shaped
  }

  private notServing(): ServiceError {
    if (this.failure) return this.failure
    if (this.state === 'loading') return new ServiceError(503, 'model_not_ready', `model ${this.uid} is still loading; retry shortly.`)
    return new ServiceError(503, 'model_not_ready', `model ${this.uid} is being terminated.`)
  }

  private exited(exit: {exitCode: number | null; signal: string | null}) {
    const {state} = this
    // A program asked to stop has not failed: requests still coming get "being terminated", a cancelled launch 499.
    if (state === 'disposing') {
      this.state = 'disposed'
      this.gone.abort()
      return
    }

    const how = exit.signal ? `was killed by ${exit.signal}` : `exited with code ${exit.exitCode}`
    this.exitHow = how

    const output = this.program?.outputTail() ?? []
    const ended = `model ${this.uid}'s program ${how}${state === 'loading' ? ' before it was ready' : ''}${recognisedCause(output)}`
    const said = `${ended}; ${outputIsInLog(this.uid)}.`
    this.failure ??= state === 'loading' ? new ServiceError(500, 'launch_failed', said) : new ServiceError(503, 'model_crashed', said)
    this.state = 'crashed'
    this.gone.abort(this.failure)
    if (state === 'ready') this.onCrash(this.failure, `${ended}; its last output: ${output.join(' | ')}.`)
  }
}
