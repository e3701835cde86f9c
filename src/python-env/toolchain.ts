/**
 * The programs that make virtual environments on this machine: the Python interpreter they are made from
 * (SERVICE_PYTHON, else `python3` on PATH) and the installer: `uv` (fast, and environments share its cache's files)
 * when it is on PATH or can be installed (`installUv`), else Python's own `venv` and `pip`.
 * SERVICE_VIRTUALENV_INSTALLER (`uv` or `pip`) picks one instead of looking.
 */
import {ServiceError} from '../kernel/errors.js'

export type InstallerKind = 'pip' | 'uv'

export interface Toolchain {
  python: {
    /** The interpreter's real path (`sys.executable`), not a shim in front of it. */
    executable: string
    /** `3.11.7`: part of every environment's name, as an environment only works with the Python it was made from. */
    version: string
  }
  installer: InstallerKind
  /** The `uv` program, when the installer is uv. */
  uv?: string
  /** uv's cache, where it keeps the package files it hard-links into environments (on their filesystem). */
  uvCacheDir?: string
}

export interface ToolchainSettings {
  /** The interpreter command; `python3` unless given. */
  python?: string
  /** `uv`, `pip`, or `auto` (uv when on PATH or installed by `installUv`). */
  installer?: string
  /** Installs uv for a machine without it on PATH, from the interpreter found; its path, or undefined when it cannot. */
  installUv?(python: string): Promise<string | undefined>
}

/** Runs a program and gives its output, or the error that it could not (ENOENT for a missing program). */
export type ProbeProgram = (file: string, args: string[]) => Promise<{exitCode: number; stdout: string; stderr: string}>

const PROBE = "import sys; print(sys.executable); print('%d.%d.%d' % sys.version_info[:3])"

export const INSTALLERS = ['auto', 'uv', 'pip'] as const

export async function execaProbe(file: string, args: string[]) {
  const {execa} = await import('execa')
  const result = await execa(file, args, {reject: false, stdin: 'ignore', timeout: 60_000})
  if (result.exitCode === undefined) throw Object.assign(new Error(result.shortMessage), {code: (result as {code?: string}).code})
  return {exitCode: result.exitCode, stderr: result.stderr, stdout: result.stdout}
}

const noPython = (command: string, why: string) =>
  new ServiceError(
    400,
    'unsupported',
    `this engine runs Python in a virtual environment, and ${why}. Install Python 3 with venv and pip (Debian and Ubuntu: \`apt install python3 python3-venv python3-pip\`; macOS: \`brew install python\`), or point SERVICE_PYTHON at an interpreter; installing uv (\`pip install uv\`) makes environments faster to create.`,
    'model_engine',
  )

/** The version of the interpreter a worker makes environments from (`3.11.7`), for the engine table; null when there is none. */
export async function pythonVersion(command = 'python3', probe: ProbeProgram = execaProbe): Promise<string | null> {
  const probed = await probe(command, ['-c', PROBE]).catch(() => undefined)
  const version = probed?.exitCode === 0 ? probed.stdout.trim().split('\n')[1] : undefined
  return version && /^3\.\d+\.\d+$/.test(version) ? version : null
}

/**
 * The worker's interpreter version, probed when first asked for rather than at start: running `python3` (behind pyenv's
 * shims, several shell scripts) costs a service start about 0.1 s of CPU, for a version that only Python engines need.
 */
export class PythonVersionProbe {
  private probing?: Promise<string | null>
  private version?: string | null

  constructor(
    private readonly command?: string,
    private readonly probe: ProbeProgram = execaProbe,
  ) {}

  /** The version once probed, null when there is none; undefined while unknown, and asking starts the probe. */
  get current(): string | null | undefined {
    void this.settled()
    return this.version
  }

  settled(): Promise<string | null> {
    this.probing ??= pythonVersion(this.command, this.probe).then((version) => (this.version = version))
    return this.probing
  }
}

/** Finds the interpreter and the installer; throws a 400 saying what to install when Python is missing. */
export async function findToolchain(settings: ToolchainSettings, probe: ProbeProgram = execaProbe): Promise<Toolchain> {
  const command = settings.python || 'python3'
  const wanted = (settings.installer || 'auto').toLowerCase()
  if (!(INSTALLERS as readonly string[]).includes(wanted))
    throw new ServiceError(400, 'unsupported', `SERVICE_VIRTUALENV_INSTALLER is "${settings.installer}"; set it to ${INSTALLERS.join(', ')}.`, 'model_engine')

  let probed: Awaited<ReturnType<ProbeProgram>>
  try {
    probed = await probe(command, ['-c', PROBE])
  } catch {
    throw noPython(command, `no Python interpreter was found (\`${command}\` is not on PATH)`)
  }

  const [executable, version] = probed.stdout.trim().split('\n')
  if (probed.exitCode !== 0 || !/^3\.\d+\.\d+$/.test(version ?? ''))
    throw noPython(command, `\`${command}\` is not a working Python 3 (${(probed.stderr || probed.stdout).trim().split('\n').pop() || `exit code ${probed.exitCode}`})`)
  const python = {executable, version}
  if (wanted === 'pip') return {installer: 'pip', python}

  const uv = await probe('uv', ['--version']).catch(() => undefined)
  if (uv?.exitCode === 0) return {installer: 'uv', python, uv: 'uv'}
  const installed = await settings.installUv?.(executable)
  if (installed) return {installer: 'uv', python, uv: installed}
  if (wanted === 'uv')
    throw new ServiceError(400, 'unsupported', 'SERVICE_VIRTUALENV_INSTALLER is uv, no `uv` is on PATH, and it could not be installed (the service log says why); install it (`pip install uv`) or unset the setting to use pip.', 'model_engine')
  return {installer: 'pip', python}
}
