/**
 * Starts `service-local` as a real process on a free port with its own temporary SERVICE_HOME, and runs
 * `servicectl` as a real process against it, as a user would.
 */
import {execa, type ResultPromise} from 'execa'
import {mkdtemp, rm} from 'node:fs/promises'
import {createServer} from 'node:net'
import {tmpdir} from 'node:os'
import {join, resolve} from 'node:path'
import type {Readable} from 'node:stream'

export const ROOT = resolve(import.meta.dirname, '../..')
export const SERVICECTL = join(ROOT, 'bin/servicectl.js')

// Every service a test starts, however it starts it, inherits this: the suite never compiles llama.cpp in the
// background (a test of the background build turns it on for itself).
process.env.SERVICE_AUTO_BUILD = '0'

/** Folders made by temporaryDirectory, removed by the root hook after each file (test/root-hooks.cjs). */
const made: Set<string> = ((globalThis as Record<symbol, unknown>)[Symbol.for('service-test.temporaryDirectories')] ??= new Set<string>()) as Set<string>

export async function temporaryDirectory(prefix = 'service-test-'): Promise<string> {
  const folder = await mkdtemp(join(tmpdir(), prefix))
  made.add(folder)
  return folder
}

export interface RunningService {
  url: string
  home: string
  process: ResultPromise
  output(): string
  stop(): Promise<void>
}

export async function startService({args = [], env = {}, home}: {home?: string; env?: Record<string, string>; args?: string[]} = {}): Promise<RunningService> {
  return startProgram('service-local', ['--port', '0', ...args], {env, home})
}

/**
 * Starts one of the service programs (`service-local`, `service-supervisor`, `service-worker`) as a real
 * process and answers once it prints where it runs. A temporary SERVICE_HOME is removed on stop unless given.
 * `programFile` runs another installation's copy (an installed package's bin) instead of this checkout's.
 */
export async function startProgram(
  program: string,
  args: string[],
  {env = {}, home, programFile = join(ROOT, 'bin', `${program}.js`)}: {home?: string; env?: Record<string, string>; programFile?: string} = {},
): Promise<RunningService> {
  const serviceHome = home ?? (await temporaryDirectory())
  const child = execa('node', [programFile, ...args], {
    all: true,
    buffer: false,
    // Self-healing is off unless a test asks for it, so a crash stays visible to the tests that check it is reported;
    // so is the background build of engines, so that the suite never compiles llama.cpp. A route answering a media
    // type it does not declare fails the request (src/server/produces.ts).
    env: {SERVICE_AUTO_BUILD: '0', SERVICE_RESTART_ATTEMPTS: '0', SERVICE_UNDECLARED_ANSWERS: 'fail', ...env, SERVICE_HOME: serviceHome},
    reject: false,
  })
  let output = ''
  child.all!.on('data', (chunk: Buffer) => (output += chunk.toString()))
  const url = await new Promise<string>((resolveUrl, reject) => {
    const timer = setTimeout(() => reject(new Error(`${program} did not start within 30 s:\n${output}`)), 30_000)
    // Searched until found only: a service logs a line a request, and a search of all its output per line would
    // cost a long benchmark's client more CPU at every request.
    const findUrl = () => {
      const match = /(?:Service|Supervisor|Worker) running at (https?:\/\/[^\s,]+)/.exec(output)
      if (!match) return
      child.all!.off('data', findUrl)
      clearTimeout(timer)
      resolveUrl(match[1])
    }

    child.all!.on('data', findUrl)
    void child.then(() => {
      clearTimeout(timer)
      reject(new Error(`${program} exited before it started:\n${output}`))
    })
  })
  return {
    home: serviceHome,
    output: () => output,
    process: child,
    async stop() {
      child.kill('SIGTERM')
      await child
      if (!home) await rm(serviceHome, {force: true, recursive: true})
    },
    url,
  }
}

export interface CliResult {
  stdout: string
  stderr: string
  exitCode: number
}

export async function servicectl(args: string[], {env = {}, input}: {env?: Record<string, string>; input?: string | Readable} = {}): Promise<CliResult> {
  const result = await execa('node', [SERVICECTL, ...args], {env: {NO_COLOR: '1', ...env}, input, reject: false})
  return {exitCode: result.exitCode ?? -1, stderr: String(result.stderr), stdout: String(result.stdout)}
}

/** One JSON call to the service; the status and the parsed body, whatever the status. */
export async function callApi(
  service: {url: string},
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{status: number; body: any}> {
  const response = await fetch(`${service.url}${path}`, {
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    headers: {'content-type': 'application/json', ...headers},
    method,
  })
  const text = await response.text()
  return {body: text ? JSON.parse(text) : null, status: response.status}
}

/** Polls `probe` until it answers something other than undefined; fails with `what` after the timeout. */
export async function until<T>(probe: () => Promise<T | undefined>, what: string, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    const value = await probe()
    if (value !== undefined) return value
    await new Promise((resolve) => setTimeout(resolve, 20))
  }

  throw new Error(`timed out waiting for ${what}`)
}

/** A loopback port nothing listens on (it was free a moment ago), for "service not running" cases. */
export async function closedPort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const {port} = server.address() as {port: number}
  await new Promise((resolve) => server.close(resolve))
  return port
}
