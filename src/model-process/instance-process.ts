/**
 * The worker's side of one model instance: a child process (spawned with execa) that loads the model once
 * and serves many concurrent requests over IPC. If the process dies, every request in flight fails at once
 * with a 503 that says why (exit code or signal, and a cause recognised in its output, which itself stays in the
 * model's log: failure-cause.ts), and later requests get the same answer until the model is terminated or
 * relaunched: a crash is reported, never a hung request.
 */
import type {InstanceState} from '../protocol/worker.js'

import {fileURLToPath} from 'node:url'

import type {LoadedModelInfo, LoadRequest, SequenceUsage} from '../kernel/contracts.js'
import type {FromInstance, ToInstance} from './messages.js'

import {ServiceError, type ServiceErrorShape} from '../kernel/errors.js'
import {currentRequestId} from '../kernel/request-context.js'
import {type LogFile, openPrivateLogFile} from '../util/logger.js'
import {checkChannelNesting} from './messages.js'
import {outputIsInLog, recognisedCause} from './failure-cause.js'
import {outputLog, ownLines} from './output-log.js'

export interface SpawnedProcess {
  pid?: number
  send(message: ToInstance): boolean
  on(event: 'message', listener: (message: FromInstance) => void): unknown
  kill(signal?: NodeJS.Signals): boolean
  exited: Promise<{exitCode?: number | null; signal?: string | null}>
  stderrTail(): string
  connected: boolean
}

export interface SpawnOptions {
  logFile: string
  env?: Record<string, string>
}

export type SpawnInstance = (options: SpawnOptions) => SpawnedProcess

const HOST_ENTRY = fileURLToPath(new URL('instance-host.js', import.meta.url))
const STDERR_TAIL_LINES = 20
/** The last lines of its own output a crash's cause is looked for in (failure-cause.ts). */
const CAUSE_LINES = 3

/**
 * The real spawner: a Node child process running instance-host.js, its output appended to the model's log, every line
 * timestamped (output-log.ts).
 * execa is loaded by the first launch rather than at start, since an idle service spawns nothing.
 */
export async function instanceSpawner(): Promise<SpawnInstance> {
  const {execaNode} = await import('execa')
  return ({env, logFile}) => {
    const log: LogFile = openPrivateLogFile(logFile)
    const child = execaNode(HOST_ENTRY, [], {
      buffer: false,
      env,
      ipc: true,
      reject: false,
      serialization: 'advanced',
      stderr: 'pipe',
      stdin: 'ignore',
      stdout: 'pipe',
    })
    const output = outputLog(log, {format: env?.SERVICE_LOG_FORMAT === 'json' ? 'json' : 'text', name: 'model', tailLines: STDERR_TAIL_LINES})
    output.follow('stdout', child.stdout)
    output.follow('stderr', child.stderr)
    let connected = true
    const exited = child.then(async (result) => {
      connected = false
      await new Promise<void>((resolve) => log.end(resolve))
      return {exitCode: result.exitCode ?? null, signal: result.signal ?? null}
    })
    return {
      get connected() {
        return connected
      },
      exited,
      kill: (signal) => child.kill(signal),
      on(_event, listener) {
        void (async () => {
          try {
            for await (const message of child.getEachMessage()) listener(message as FromInstance)
          } catch {
            // The channel closes when the process exits; `exited` reports that.
          }
        })()
      },
      pid: child.pid,
      send(message) {
        if (!connected) return false
        // execa throws at once, not through the promise, once the channel has closed but before `exited` has settled;
        // the requests in flight are then failed by the exit, with its reason, rather than by this throw as a 500.
        try {
          child.sendMessage(message as never).catch(() => {})
          return true
        } catch {
          return false
        }
      },
      stderrTail: () => output.lines().join('\n'),
    }
  }
}

interface Pending {
  push(event: unknown): void
  end(): void
  fail(error: ServiceErrorShape): void
}

export class InstanceProcess {
  state: InstanceState = 'loading'
  info: LoadedModelInfo = {}
  /** The engine's last report of its sequences and waiting requests, when it makes them. */
  usage?: SequenceUsage
  operations: string[] = []
  /** Why the process is gone, once it is. */
  failure?: ServiceError
  private readonly pending = new Map<number, Pending>()
  private nextId = 1
  private readonly process: SpawnedProcess
  /** Given to the engine's load (LoadContext.cacheDir). */
  private readonly cacheDir?: string
  private readyWaiter?: {resolve(): void; reject(error: ServiceError): void}
  private onLoadProgress?: (fraction: number) => void

  constructor(
    readonly uid: string,
    spawn: SpawnInstance,
    options: SpawnOptions & {cacheDir?: string},
    /** `report`: the crash for the service's log, with every line of output kept, those about requests included. */
    private readonly onCrash: (error: ServiceError, report: string) => void = () => {},
  ) {
    this.cacheDir = options.cacheDir
    this.process = spawn(options)
    this.process.on('message', (message) => this.receive(message))
    void this.process.exited.then((exit) => this.exited(exit))
  }

  get pid(): number | undefined {
    return this.process.pid
  }

  /** Loads the model; rejects with the engine's own reason (bad file, not enough memory, …). */
  load(hostModule: string, request: LoadRequest, signal?: AbortSignal, onProgress?: (fraction: number) => void): Promise<void> {
    return new Promise((resolve, reject) => {
      const abort = () => {
        this.readyWaiter = undefined
        this.onLoadProgress = undefined
        reject(new ServiceError(499, 'request_aborted', `the launch of ${this.uid} was cancelled while its model was loading.`))
        void this.dispose()
      }

      // Once loaded, the model no longer belongs to the launch: a late abort must not dispose it.
      const done = () => {
        signal?.removeEventListener('abort', abort)
        this.onLoadProgress = undefined
      }

      this.readyWaiter = {
        reject(error) {
          done()
          reject(error)
        },
        resolve() {
          done()
          resolve()
        },
      }
      this.onLoadProgress = onProgress
      if (signal?.aborted) return abort()
      signal?.addEventListener('abort', abort, {once: true})
      this.process.send({cacheDir: this.cacheDir, hostModule, request, type: 'load'})
    })
  }

  /** One operation as a stream of events; aborting the signal aborts the work in the model process. */
  async *invoke(operation: string, payload: unknown, signal: AbortSignal): AsyncGenerator<unknown> {
    if (this.state !== 'ready') throw this.notServing()
    checkChannelNesting(payload, 'the request', 400)
    const id = this.nextId++
    const queue: unknown[] = []
    let finished = false
    let failure: ServiceErrorShape | undefined
    let wake: (() => void) | undefined
    const notify = () => {
      wake?.()
      wake = undefined
    }

    // The first outcome stands: a request failed by its model's termination ignores what the process sends after.
    this.pending.set(id, {
      end() {
        finished = true
        notify()
      },
      fail(error) {
        if (finished) return
        failure = error
        finished = true
        notify()
      },
      push(event) {
        if (finished) return
        queue.push(event)
        notify()
      },
    })
    const abort = () => this.process.send({id, type: 'abort'})
    signal.addEventListener('abort', abort, {once: true})
    try {
      this.process.send({id, operation, payload, requestId: currentRequestId(), type: 'invoke'})
      while (true) {
        if (queue.length > 0) {
          yield queue.shift()
          continue
        }

        if (finished) break
        await new Promise<void>((resolve) => {
          wake = resolve
        })
      }

      if (failure) throw new ServiceError(failure.status, failure.code, failure.message, failure.param)
    } finally {
      signal.removeEventListener('abort', abort)
      // A consumer that stops early (client disconnect) must stop the model's work too.
      if (!finished) abort()
      this.pending.delete(id)
    }
  }

  /** Asks the process to free its model and exit; kills it if it does not within the grace period. */
  async dispose(graceMs = 5000): Promise<void> {
    if (this.state === 'disposed') return
    this.state = 'disposing'
    // Requests still running end with why, rather than with whatever the engine throws as its model goes away.
    const terminated = new ServiceError(503, 'model_not_ready', `model ${this.uid} was terminated while this request was running.`)
    for (const pending of this.pending.values()) pending.fail(terminated)
    this.process.send({type: 'dispose'})
    const timer = setTimeout(() => this.process.kill('SIGKILL'), graceMs)
    await this.process.exited
    clearTimeout(timer)
  }

  private notServing(): ServiceError {
    if (this.failure) return this.failure
    if (this.state === 'loading') return new ServiceError(503, 'model_not_ready', `model ${this.uid} is still loading; retry shortly.`)
    return new ServiceError(503, 'model_not_ready', `model ${this.uid} is being terminated.`)
  }

  private receive(message: FromInstance) {
    switch (message.type) {
      case 'load-progress': {
        this.onLoadProgress?.(message.fraction)
        break
      }

      case 'usage': {
        this.usage = message.usage
        break
      }

      case 'ready': {
        this.state = 'ready'
        this.info = message.info
        this.operations = message.operations
        this.readyWaiter?.resolve()
        this.readyWaiter = undefined
        break
      }

      case 'load-failed': {
        this.failure = new ServiceError(message.error.status >= 500 ? 500 : message.error.status, 'launch_failed', message.error.message, message.error.param)
        this.readyWaiter?.reject(this.failure)
        this.readyWaiter = undefined
        break
      }

      case 'event': {
        this.pending.get(message.id)?.push(message.event)
        break
      }

      case 'batch': {
        for (const each of message.messages) this.receive(each)
        break
      }

      case 'end': {
        this.pending.get(message.id)?.end()
        break
      }

      case 'error': {
        this.pending.get(message.id)?.fail(message.error)
        break
      }

      case 'disposed': {
        break
      }
    }
  }

  private exited(exit: {exitCode?: number | null; signal?: string | null}) {
    const wasDisposing = this.state === 'disposing'
    const how = exit.signal ? `was killed by ${exit.signal}` : `exited with code ${exit.exitCode}`
    const lines = this.process.stderrTail().split('\n').filter((line) => line.trim() !== '')
    const ended = `model ${this.uid}'s process ${how}${recognisedCause(ownLines(lines).slice(-CAUSE_LINES))}`
    this.failure ??= new ServiceError(503, 'model_crashed', `${ended}; ${outputIsInLog(this.uid)}.`)
    this.state = wasDisposing ? 'disposed' : 'crashed'
    this.readyWaiter?.reject(this.failure)
    this.readyWaiter = undefined
    for (const pending of this.pending.values()) pending.fail(this.failure)
    this.pending.clear()
    if (!wasDisposing) this.onCrash(this.failure, `${ended}; its last output: ${lines.join(' | ')}.`)
  }
}
