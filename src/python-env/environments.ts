/**
 * Virtual environments for engines that run Python, one per distinct set of packages and Python version, under
 * SERVICE_HOME/virtualenv/ (or SERVICE_VIRTUALENV_DIR): `py3.11.7-<hash of the request>`. Every model whose engine
 * and registration ask for the same set shares it. Launches that need one being made wait for that one making
 * (single flight, as downloads do); the making stops only when every launch waiting for it has been cancelled.
 *
 * Never half-made: an environment is built in a temporary folder beside its final place, its scripts are pointed at
 * the final place, a marker file is written last and the folder is renamed into place. A folder without the
 * marker is not an environment, and a temporary folder whose service died is removed the next time one is made.
 */
import {createHash, randomBytes} from 'node:crypto'
import {existsSync} from 'node:fs'
import {mkdir, readdir, readFile, rename, rm, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import type {Logger} from '../kernel/contracts.js'
import type {PythonEnvironment, PythonEnvRequest} from '../kernel/virtualenv.js'
import type {SpawnProgram} from '../model-process/program-spawner.js'
import type {VirtualEnvironment} from '../protocol/virtualenvs.js'

import {conflict, notFound, ServiceError} from '../kernel/errors.js'
import {programSpawner} from '../model-process/program-spawner.js'
import {folderUsages} from './disk-usage.js'
import {bytecodeStep, installSteps, type InstallStep} from './install-steps.js'
import {readPipSources} from './pip-config.js'
import {pointScriptsAt} from './relocate.js'
import {execaProbe, findToolchain, type ProbeProgram, type Toolchain, type ToolchainSettings} from './toolchain.js'
import {uvFromPyPI} from './uv-from-pypi.js'

/** Written last into a finished environment: what it holds, for listing it. */
export const MARKER = 'service-environment.json'
const TEMPORARY = '.creating-'
const UV_CACHE = '.uv-cache'
const REMOVING = '.removing-'
/** What `environmentName` makes: nothing else in the folder is an environment (or may be removed as one). */
const NAME = /^py\d+\.\d+\.\d+-[\da-f]{16}$/
const REPORTED_LINES = 5
const STOP_GRACE_MS = 3000

export interface EnvironmentRecord {
  name: string
  python: string
  installer: string
  packages: string[]
  request: PythonEnvRequest
  created_at: string
  /** Every module compiled at install; an environment made before that was done is compiled on its next use. */
  bytecode?: boolean
}

/** An environment as listings show it, before the worker adds the models using it. */
export type EnvironmentSummary = Omit<VirtualEnvironment, 'models'>

export interface PythonEnvironmentsOptions extends ToolchainSettings {
  /** The folder environments live in. */
  root: string
  log: Logger
  spawn?: SpawnProgram
  probe?: ProbeProgram
}

export interface EnsureOptions {
  /** Aborted when the launch is cancelled. */
  signal: AbortSignal
  /** Where the installer's output goes (the model's log). */
  logFile: string
  /** Told when the environment has to be made (or is being made by another launch), not when it exists. */
  onInstalling?(): void
}

interface Flight {
  made: Promise<PythonEnvironment>
  stop: AbortController
  waiting: number
}

export const environmentOf = (envDir: string): PythonEnvironment => ({binDir: join(envDir, 'bin'), envDir, executable: join(envDir, 'bin', 'python')})

/** The environment's folder name: the Python version and a hash of the normalised request. */
export function environmentName(pythonVersion: string, request: PythonEnvRequest): string {
  const hash = createHash('sha256').update(JSON.stringify({python: pythonVersion, ...request})).digest('hex').slice(0, 16)
  return `py${pythonVersion}-${hash}`
}

const pidAlive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}

export class PythonEnvironments {
  private readonly flights = new Map<string, Flight>()
  private readonly compilings = new Map<string, Promise<void>>()
  private toolchainFound?: Promise<Toolchain>

  constructor(private readonly options: PythonEnvironmentsOptions) {}

  /** SERVICE_VIRTUALENV_DIR, SERVICE_PYTHON and SERVICE_VIRTUALENV_INSTALLER over the defaults. */
  static fromEnvironment(defaultRoot: string, env: NodeJS.ProcessEnv, log: Logger): PythonEnvironments {
    return new PythonEnvironments({installer: env.SERVICE_VIRTUALENV_INSTALLER, log, python: env.SERVICE_PYTHON, root: env.SERVICE_VIRTUALENV_DIR || defaultRoot})
  }

  get root(): string {
    return this.options.root
  }

  /** The environment for `request`, made first when it does not exist yet. */
  async ensure(request: PythonEnvRequest, {logFile, onInstalling, signal}: EnsureOptions): Promise<PythonEnvironment> {
    const toolchain = await this.toolchain()
    const name = environmentName(toolchain.python.version, request)
    const envDir = join(this.options.root, name)
    for (;;) {
      if (existsSync(join(envDir, MARKER))) {
        await this.compiled(envDir, logFile)
        return environmentOf(envDir)
      }

      if (signal.aborted) throw cancelled()
      const current = this.flights.get(name)
      // A making being stopped (its launches all cancelled) cannot serve this launch: wait until it is gone.
      if (current?.stop.signal.aborted) {
        await current.made.catch(() => {})
        continue
      }

      const flight = current ?? this.startFlight(name, request, toolchain, logFile)
      onInstalling?.()
      return this.wait(flight, signal)
    }
  }

  private startFlight(name: string, request: PythonEnvRequest, toolchain: Toolchain, logFile: string): Flight {
    const stop = new AbortController()
    const made = this.make(name, request, toolchain, logFile, stop.signal).finally(() => this.flights.delete(name))
    // Nobody may be waiting when it fails (every launch cancelled); the failure is theirs, not unhandled.
    made.catch(() => {})
    const flight = {made, stop, waiting: 0}
    this.flights.set(name, flight)
    return flight
  }

  /** Waits for a making; the last launch to leave stops it and waits until its temporary folder is gone. */
  private async wait(flight: Flight, signal: AbortSignal): Promise<PythonEnvironment> {
    flight.waiting++
    let onAbort = () => {}
    const left = new Promise<'left'>((resolve) => {
      onAbort = () => resolve('left')
      signal.addEventListener('abort', onAbort, {once: true})
    })
    try {
      const outcome = await Promise.race([flight.made, left])
      if (outcome !== 'left') return outcome
      if (--flight.waiting === 0) {
        flight.stop.abort()
        await flight.made.catch(() => {})
      }

      throw cancelled()
    } finally {
      signal.removeEventListener('abort', onAbort)
    }
  }

  /** uv keeps its cache beside the environments: hard links, which let them share package files, stay on one filesystem. */
  private toolchain(): Promise<Toolchain> {
    const probe = this.options.probe ?? execaProbe
    const {log, root} = this.options
    const installUv =
      this.options.installUv ??
      (async (python: string) => {
        await mkdir(root, {recursive: true})
        return uvFromPyPI(root, python, log)
      })
    this.toolchainFound ??= findToolchain({...this.options, installUv}, probe).then((found) => (found.installer === 'uv' ? {...found, uvCacheDir: join(root, UV_CACHE)} : found))
    // A machine without Python may get one while the service runs: look again next time.
    this.toolchainFound.catch(() => (this.toolchainFound = undefined))
    return this.toolchainFound
  }

  private async make(name: string, request: PythonEnvRequest, toolchain: Toolchain, logFile: string, signal: AbortSignal): Promise<PythonEnvironment> {
    const {log, root} = this.options
    const envDir = join(root, name)
    await mkdir(root, {recursive: true})
    await this.removeAbandoned()
    const temporary = join(root, `${TEMPORARY}${process.pid}-${randomBytes(4).toString('hex')}-${name}`)
    const inherited = toolchain.installer === 'uv' && request.inheritPipConfig ? await readPipSources(toolchain.python.executable, this.options.probe ?? execaProbe) : undefined
    const what = request.packages.length > 0 ? request.packages.join(', ') : 'no packages'
    log.info(`creating Python environment ${name} with ${toolchain.installer} (Python ${toolchain.python.version}): ${what}`)
    try {
      for (const step of installSteps(toolchain, request, temporary, inherited)) await this.run(step, logFile, signal, what)
      await pointScriptsAt(temporary, envDir)
      const record: EnvironmentRecord = {bytecode: true, created_at: new Date().toISOString(), installer: toolchain.installer, name, packages: request.packages, python: toolchain.python.version, request}
      await writeFile(join(temporary, MARKER), JSON.stringify(record, null, 2) + '\n')
      // A folder left without its marker (a crash before this code existed) is not an environment; make way.
      if (existsSync(envDir) && !existsSync(join(envDir, MARKER))) await rm(envDir, {force: true, recursive: true})
      await rename(temporary, envDir).catch(async (error: NodeJS.ErrnoException) => {
        // Another service sharing the folder finished the same environment first: use it.
        if (!existsSync(join(envDir, MARKER))) throw error
        await rm(temporary, {force: true, recursive: true})
      })
    } catch (error) {
      await rm(temporary, {force: true, recursive: true})
      if (signal.aborted) log.info(`stopped creating Python environment ${name}: every launch waiting for it was cancelled`)
      else log.warn(`could not create Python environment ${name}: ${(error as Error).message}`)
      throw error
    }

    log.info(`created Python environment ${name}`)
    return environmentOf(envDir)
  }

  /**
   * Compiles an environment made before installs compiled its modules, once (launches of its models wait together).
   * Never fails a launch: an environment that cannot be written to still runs, only slower to start.
   */
  private async compiled(envDir: string, logFile: string): Promise<void> {
    const markerPath = join(envDir, MARKER)
    const record = JSON.parse(await readFile(markerPath, 'utf8')) as EnvironmentRecord
    if (record.bytecode) return
    const name = record.name
    let compiling = this.compilings.get(name)
    if (!compiling) {
      this.options.log.info(`compiling the modules of Python environment ${name} to bytecode, once`)
      compiling = this.run(bytecodeStep(envDir), logFile, new AbortController().signal, name)
        .then(async () => {
          // Renamed into place, so that a service reading the marker meanwhile never sees half of it.
          const temporary = `${markerPath}.${process.pid}.tmp`
          await writeFile(temporary, JSON.stringify({...record, bytecode: true}, null, 2) + '\n')
          await rename(temporary, markerPath)
        })
        .catch((error: Error) => this.options.log.warn(`could not compile Python environment ${name} to bytecode: ${error.message}`))
        .finally(() => this.compilings.delete(name))
      this.compilings.set(name, compiling)
    }

    await compiling
  }

  /** Runs one step with its output in the log; a failure says which step and quotes its last lines. */
  private async run(step: InstallStep, logFile: string, signal: AbortSignal, what: string): Promise<void> {
    if (signal.aborted) throw cancelled()
    const spawn = this.options.spawn ?? (await programSpawner())
    const program = spawn({args: step.args, env: {}, file: step.file, logFile})
    const stop = () => {
      program.kill('SIGTERM')
      setTimeout(() => program.kill('SIGKILL'), STOP_GRACE_MS).unref()
    }

    signal.addEventListener('abort', stop, {once: true})
    const exit = await program.exited.finally(() => signal.removeEventListener('abort', stop))
    if (signal.aborted) throw cancelled()
    if (exit.exitCode === 0) return
    const how = exit.signal ? `was killed by ${exit.signal}` : `exited with code ${exit.exitCode}`
    const lines = program.outputTail().slice(-REPORTED_LINES)
    throw new ServiceError(
      500,
      'launch_failed',
      `could not create the Python environment for ${what}: ${step.title} ${how}${lines.length > 0 ? `; its last output: ${lines.join(' | ')}` : ''}.`,
    )
  }

  /** Temporary folders of services that died while making an environment. */
  private async removeAbandoned(): Promise<void> {
    for (const entry of await readdir(this.options.root)) {
      const prefix = [TEMPORARY, REMOVING].find((start) => entry.startsWith(start))
      const pid = Number(prefix ? entry.slice(prefix.length).split('-')[0] : Number.NaN)
      if (Number.isInteger(pid) && pid !== process.pid && !pidAlive(pid)) await rm(join(this.options.root, entry), {force: true, recursive: true})
    }
  }

  /** The finished environments, with what their markers say and their sizes on disk (see `FolderUsage`). */
  async list(): Promise<EnvironmentSummary[]> {
    const entries = existsSync(this.options.root) ? await readdir(this.options.root) : []
    const records = await Promise.all(
      entries
        .filter((entry) => NAME.test(entry))
        .sort()
        .map(async (entry) => {
          const text = await readFile(join(this.options.root, entry, MARKER), 'utf8').catch(() => undefined)
          return text ? {path: join(this.options.root, entry), record: JSON.parse(text) as EnvironmentRecord} : undefined
        }),
    )
    const finished = records.filter((found) => found !== undefined)
    const usages = await folderUsages(finished.map(({path}) => path))
    return finished.map(({path, record: {created_at, installer, name, packages, python}}, index) => ({created_at, installer, name, packages, path, python, ...usages[index]}))
  }

  /** Deletes a finished environment (moved aside first, so it is never half there); answers where it was. */
  async remove(name: string): Promise<string> {
    const path = join(this.options.root, name)
    if (this.flights.has(name)) throw conflict(`Python environment ${name} is being made by a launch; cancel that launch first.`, 'name')
    if (!NAME.test(name) || !existsSync(join(path, MARKER))) throw notFound(`there is no Python environment named ${name}; \`servicectl virtualenvs\` lists them.`, 'not_found', 'name')
    const aside = join(this.options.root, `${REMOVING}${process.pid}-${randomBytes(4).toString('hex')}-${name}`)
    await rename(path, aside)
    await rm(aside, {force: true, recursive: true})
    return path
  }
}

const cancelled = () => new ServiceError(499, 'request_aborted', 'the launch was cancelled while its Python environment was being created.')
