/**
 * The background build a service starts by itself (issue 20): for each engine whose plugin offers one
 * (`EngineBuild.auto`), when the person allowed it and the machine has every program the build needs, it takes the
 * machine-wide lock in the folder the build writes into, asks the engine's probe whether a build would help (after
 * taking the lock, so a second service does not build again what the first just built), then runs the build at the
 * lowest priority. Nothing waits for it: startup, launches and requests go on, and models launched once it has
 * succeeded load the new build, each in its own process. A failure is reported once and not retried until the next
 * start or `servicectl engine build`. Its status is kept here and mirrored into a file beside the lock, so that
 * another service on the machine, which finds the lock held, reports the same progress, until the lock shows that
 * the service holding it is gone (killed in the middle of a build).
 */
import {mkdir, open, readFile, rename, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import type {Logger} from '../kernel/contracts.js'
import type {EngineBuildPlan, ProgramFinder} from '../kernel/engine-build-plan.js'
import type {Kernel} from '../kernel/kernel.js'
import type {EngineBuildStatus} from '../protocol/engine-build.js'

import {findOnPath, planEngineBuild} from '../kernel/engine-build-plan.js'
import {notFound} from '../kernel/errors.js'
import {
  type BuildLock,
  type BuildLockCheck,
  buildLockHeld,
  type BuildProcess,
  type BuildStarter,
  type OutputReader,
  readOutput,
  startLowPriorityBuild,
  takeBuildLock,
} from './build-process.js'
import {
  type AutoBuildSetting,
  type BuildProgress,
  firstDecision,
  followBuildOutput,
  formatDuration,
  parseProbeOutput,
  progressWorthLogging,
  startProgress,
} from './engine-auto-build.js'
import {PRIVATE_FILE, PRIVATE_FOLDER} from '../kernel/private-home.js'

export interface AutoBuilderOptions {
  log: Logger
  setting: AutoBuildSetting
  /** Where each build's whole output is written, `engine-build-<engine>.log`. */
  logDir: string
  findProgram?: ProgramFinder
  readOutput?: OutputReader
  startBuild?: BuildStarter
  lock?: BuildLock
  lockHeld?: BuildLockCheck
  now?: () => number
}

/** Between logged steps, the shared status is written at most this often while a build prints. */
const SHARED_STATUS_INTERVAL_MS = 2000

const statusFile = (folder: string) => join(folder, 'service-auto-build.json')

export class EngineAutoBuilder {
  private readonly statuses = new Map<string, EngineBuildStatus>()
  /** Engines another service is building: the folder of their lock and shared status file. */
  private readonly elsewhere = new Map<string, string>()
  private readonly plans: EngineBuildPlan[]
  private running?: BuildProcess
  private disposed = false
  private work?: Promise<void>
  /** The shared status's writes, one after the other. */
  private sharing = Promise.resolve()
  private readonly findProgram: ProgramFinder
  private readonly readOutput: OutputReader
  private readonly startBuild: BuildStarter
  private readonly lock: BuildLock
  private readonly lockHeld: BuildLockCheck
  private readonly now: () => number

  constructor(
    plans: EngineBuildPlan[],
    private readonly options: AutoBuilderOptions,
  ) {
    this.plans = plans.filter((plan) => plan.auto)
    this.findProgram = options.findProgram ?? ((program) => findOnPath(program))
    this.readOutput = options.readOutput ?? readOutput
    this.startBuild = options.startBuild ?? startLowPriorityBuild(this.findProgram)
    this.lock = options.lock ?? takeBuildLock
    // A lock injected without its check is one whose holder never goes away.
    this.lockHeld = options.lockHeld ?? (options.lock ? async () => true : buildLockHeld)
    this.now = options.now ?? Date.now
  }

  /** One for every engine of the kernel that offers a background build. */
  static forKernel(kernel: Kernel, options: AutoBuilderOptions): EngineAutoBuilder {
    const findProgram = options.findProgram ?? ((program: string) => findOnPath(program))
    const plans = [...kernel.engines.values()].filter((engine) => engine.definition.build?.auto).map((engine) => planEngineBuild(kernel, engine.definition.name, findProgram))
    return new EngineAutoBuilder(plans, {...options, findProgram})
  }

  /** Starts the work in the background, one engine after the other; it never throws and nothing needs to wait for it. */
  start(): void {
    this.work ??= (async () => {
      for (const plan of this.plans) {
        if (this.disposed) return
        await this.consider(plan).catch((error: Error) => this.fail(plan, error))
      }
    })()
  }

  /** The engine's status, read from the service that builds it when that is another one; a 404 for an engine with no background build. */
  async status(engine: string): Promise<EngineBuildStatus> {
    const plan = this.plans.find((candidate) => candidate.engine.toLowerCase() === engine.toLowerCase())
    if (!plan) throw notFound(`engine ${engine} has no background build here; engines that have one: ${this.plans.map((p) => p.engine).join(', ') || '(none)'}.`)
    const folder = this.elsewhere.get(plan.engine)
    if (folder) return this.sharedStatus(plan, folder)
    return this.statuses.get(plan.engine) ?? {engine: plan.engine, state: 'checking'}
  }

  /** Every engine's, in the order they are built. */
  all(): Promise<EngineBuildStatus[]> {
    return Promise.all(this.plans.map((plan) => this.status(plan.engine)))
  }

  /**
   * The status the service holding the lock shares. One it left unfinished (building, or no status yet) is a failure
   * once the lock shows it is gone; the file is read again after the lock, as a holder that ends writes its last
   * status before it releases the lock.
   */
  private async sharedStatus(plan: EngineBuildPlan, folder: string): Promise<EngineBuildStatus> {
    const read = () => readFile(statusFile(folder), 'utf8').then((text) => JSON.parse(text) as EngineBuildStatus, () => undefined)
    const unfinished = (status?: EngineBuildStatus) => !status || status.state === 'building' || status.state === 'checking'
    const status = await read()
    if (!unfinished(status) || (await this.lockHeld(folder))) return status ?? {engine: plan.engine, reason: 'another service on this machine holds the build lock and is building it.', state: 'building'}
    const last = await read()
    if (!unfinished(last)) return last!
    return {
      ...last,
      engine: plan.engine,
      error: `the service on this machine that held the build lock stopped before the build ended; the next service to start here builds it again (or \`servicectl engine build ${plan.engine}\`).`,
      pid: undefined,
      state: 'failed',
    }
  }

  /** Stops a running build (its status says so) and waits for the work to end, releasing the lock. */
  async dispose(): Promise<void> {
    this.disposed = true
    this.running?.stop()
    await this.work
    await this.sharing
  }

  private async consider(plan: EngineBuildPlan): Promise<void> {
    const {log} = this.options
    const first = firstDecision(plan, this.options.setting)
    if (first !== 'probe') {
      this.set(plan, first)
      log.info(`${plan.engine}: no background build: ${first.reason}`)
      return
    }

    const folder = plan.auto!.folder
    // Not shared yet: until this service holds the lock, the shared status is another's.
    this.set(plan, {engine: plan.engine, state: 'checking'}, {share: false})
    await mkdir(folder, {recursive: true})
    const release = await this.lock(folder)
    if (!release) {
      this.elsewhere.set(plan.engine, folder)
      log.info(`${plan.engine}: another service on this machine is building it in the background; GET /v1/engines/${plan.engine}/build shows its progress.`)
      return
    }

    try {
      // This service's now: a status left by a killed holder no longer speaks for the build.
      this.set(plan, {engine: plan.engine, state: 'checking'})
      const probe = await this.readOutput(plan.auto!.probeCommand)
      const verdict = probe.exitCode === 0 ? parseProbeOutput(probe.stdout) : undefined
      if (!verdict) {
        const reason = `could not tell whether a build would help: ${plan.auto!.probeCommand.join(' ')} ended with exit code ${probe.exitCode}.`
        // Shared, unlike an unavailable first decision (which is this service's own): it ends the lock holder's turn.
        this.set(plan, {engine: plan.engine, reason, state: 'unavailable'}, {share: true})
        log.warn(`${plan.engine}: no background build: ${reason}`)
      } else if (!verdict.wanted) {
        this.set(plan, {engine: plan.engine, reason: verdict.reason, state: 'not_needed'})
        log.info(`${plan.engine}: no background build needed: ${verdict.reason}`)
      } else if (!this.disposed) await this.build(plan, folder, verdict.reason)
    } catch (error) {
      // Shared before the lock is free, like every other ending.
      this.fail(plan, error as Error)
    } finally {
      // The last status is in the file before the lock is free, so a service that sees the lock free reads how it ended.
      await this.sharing
      await release()
    }
  }

  private async build(plan: EngineBuildPlan, folder: string, why: string): Promise<void> {
    const {log, logDir} = this.options
    await mkdir(logDir, {mode: PRIVATE_FOLDER, recursive: true})
    const logFile = join(logDir, `engine-build-${plan.engine.replaceAll(/[^\w.-]/g, '_')}.log`)
    const logHandle = await open(logFile, 'w', PRIVATE_FILE)
    // An existing log, from an earlier version, keeps its mode through open.
    await logHandle.chmod(PRIVATE_FILE)
    const output = logHandle.createWriteStream()
    const started = this.now()
    let progress: BuildProgress = startProgress()
    let sharedAt = 0
    const building = (): EngineBuildStatus => ({
      engine: plan.engine,
      lines: progress.lines,
      log_file: logFile,
      log_tail: progress.tail.slice(-5),
      percent: progress.percent,
      pid: this.running?.pid,
      stage: progress.stage,
      started,
      state: 'building',
    })
    this.running = this.startBuild(plan.command, (line) => {
      output.write(`${line}\n`)
      const next = followBuildOutput(progress, line)
      const step = progressWorthLogging(progress, next)
      if (step) log.info(`${plan.engine}: background build ${next.percent === undefined ? next.stage : `${next.percent}% (${next.stage})`}`)
      progress = next
      // Each logged step reaches the other services at once; the lines between them every so often.
      const share = step || this.now() - sharedAt >= SHARED_STATUS_INTERVAL_MS
      if (share) sharedAt = this.now()
      this.set(plan, building(), {share})
    })
    this.set(plan, building())
    log.info(
      `${plan.engine}: building it for this machine in the background at low priority (pid ${this.running.pid}), as ${why}. ${plan.description} Models launched before it ends use the current binaries. Progress: GET /v1/engines/${plan.engine}/build; output: ${logFile}. It stops with the service and starts again with the next; --no-auto-build or SERVICE_AUTO_BUILD=0 turns it off.`,
    )
    const {exitCode, signal} = await this.running.exited
    this.running = undefined
    await new Promise((resolve) => output.end(resolve))
    const took = formatDuration(this.now() - started)
    if (exitCode !== 0) {
      const error = this.disposed ? 'stopped with the service that ran it; it starts again with the next service' : signal ? `stopped by ${signal}` : `exit code ${exitCode}`
      this.set(plan, {...building(), error, finished: this.now(), log_tail: progress.tail, pid: undefined, state: 'failed'})
      log.warn(
        `${plan.engine}: the background build failed after ${took} (${error}); not retried until the next start or \`servicectl engine build ${plan.engine}\`. Last lines:\n${progress.tail.slice(-10).join('\n')}`,
      )
      return
    }

    const report = plan.reportCommand ? await this.readOutput(plan.reportCommand) : undefined
    const binaries = report?.exitCode === 0 ? report.stdout.trim() : undefined
    this.set(plan, {...building(), binaries, finished: this.now(), percent: 100, pid: undefined, state: 'succeeded'})
    log.info(`${plan.engine}: built for this machine in the background in ${took}.${binaries ? ` ${binaries}` : ''}`)
  }

  private fail(plan: EngineBuildPlan, error: Error): void {
    this.set(plan, {engine: plan.engine, error: error.message, finished: this.now(), state: 'failed'})
    this.options.log.warn(`${plan.engine}: the background build failed: ${error.message}`)
  }

  /**
   * Keeps the status, and writes it for the machine's other services: by default every state but `off` and
   * `unavailable`, which a service decides for itself before it takes the lock.
   */
  private set(plan: EngineBuildPlan, status: EngineBuildStatus, {share = status.state !== 'off' && status.state !== 'unavailable'} = {}): void {
    this.statuses.set(plan.engine, status)
    const folder = plan.auto?.folder
    if (share && folder) this.sharing = this.sharing.then(() => writeShared(statusFile(folder), status))
  }
}

/** Written whole and renamed into place, so a reader never sees half of it. */
async function writeShared(file: string, status: EngineBuildStatus): Promise<void> {
  const temporary = `${file}.${process.pid}.tmp`
  try {
    await writeFile(temporary, JSON.stringify(status) + '\n')
    await rename(temporary, file)
  } catch {}
}
