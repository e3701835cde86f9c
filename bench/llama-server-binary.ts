/**
 * llama.cpp's own `llama-server`, built from the very llama.cpp source node-llama-cpp bundles (its git bundle
 * under node_modules/node-llama-cpp/llama/), so the comparison runs the same kernels at the same release with no
 * manual step. The build (cmake, CPU or `--gpu` CUDA, no curl, only the llama-server target) lands in
 * ~/.cache/service-bench/llama-server-<release>[-cuda]/ outside the repository and is reused by every later run; a
 * build that stopped half-way leaves no binary there and is redone. Runs alone with
 * `node --import tsx bench/llama-server-binary.ts [--gpu]` to build ahead of a bench (about 10 minutes on 2 cores).
 */
import {execa, type ResultPromise} from 'execa'
import getPort from 'get-port'
import {access, mkdir, readFile, rename, rm} from 'node:fs/promises'
import {cpus, homedir} from 'node:os'
import {join} from 'node:path'
import {parseArgs} from 'node:util'

import {ROOT} from '../test/helpers/service.js'

export const BENCH_CACHE = process.env.SERVICE_BENCH_CACHE || join(homedir(), '.cache', 'service-bench')
const LLAMA_DIRECTORY = join(ROOT, 'node_modules/node-llama-cpp/llama')

/** The llama.cpp release node-llama-cpp bundles (its tag, e.g. b6000). */
export async function bundledRelease(): Promise<string> {
  const info = JSON.parse(await readFile(join(LLAMA_DIRECTORY, 'llama.cpp.info.json'), 'utf8')) as {tag: string}
  return info.tag
}

const exists = (path: string) =>
  access(path).then(
    () => true,
    () => false,
  )

/**
 * The path of a llama-server binary for the bundled release, building it first when the cache has none. The
 * build runs at low priority (nice 10) so that a machine shared with others keeps serving them meanwhile.
 */
export async function ensureLlamaServer({gpu = false, log = console.error}: {gpu?: boolean; log?: (line: string) => void} = {}): Promise<string> {
  const release = await bundledRelease()
  const directory = join(BENCH_CACHE, `llama-server-${release}${gpu ? '-cuda' : ''}`)
  const binary = join(directory, 'llama-server')
  if (await exists(binary)) return binary
  const source = join(directory, 'src')
  const build = join(directory, 'build')
  await mkdir(directory, {recursive: true})
  if (!(await exists(join(source, 'CMakeLists.txt')))) {
    await rm(source, {force: true, recursive: true})
    log(`llama-server: cloning llama.cpp ${release} from node-llama-cpp's bundle into ${source}`)
    await execa('git', ['clone', '--quiet', join(LLAMA_DIRECTORY, 'gitRelease.bundle'), source])
  }

  const flags = ['-DCMAKE_BUILD_TYPE=Release', '-DLLAMA_CURL=OFF', '-DLLAMA_BUILD_TESTS=OFF', '-DLLAMA_BUILD_EXAMPLES=OFF', `-DGGML_CUDA=${gpu ? 'ON' : 'OFF'}`]
  log(`llama-server: building ${release}${gpu ? ' with CUDA' : ''} in ${build} (about 10 minutes on 2 cores)`)
  const started = performance.now()
  // cmake's own words end the error (for --gpu without a CUDA toolkit or GPU: "No CUDA devices found", …).
  const cmake = (args: string[]) =>
    execa('nice', ['-n', '10', 'cmake', ...args], {stdout: 'ignore'}).catch((error: {stderr?: string}) => {
      throw new Error(`llama-server's build failed (cmake ${args.join(' ')}):\n${(error.stderr ?? '').split('\n').slice(-15).join('\n')}`)
    })
  await cmake(['-S', source, '-B', build, ...flags])
  await cmake(['--build', build, '--target', 'llama-server', '--config', 'Release', '-j', String(cpus().length)])
  // The binary appears in the cache only once whole, so an interrupted build is never taken for a finished one.
  await rename(join(build, 'bin', 'llama-server'), binary)
  log(`llama-server: built in ${((performance.now() - started) / 60_000).toFixed(1)} min`)
  return binary
}

export interface RunningLlamaServer {
  url: string
  process: ResultPromise
  stop(): Promise<void>
}

/**
 * Starts llama-server on a free port with `slots` parallel sequences of `contextPerSlot` tokens each (llama-server
 * splits -c among its slots) and answers once its health check says the model is loaded.
 */
export async function startLlamaServer(binary: string, modelPath: string, {contextPerSlot, gpu = false, slots, threads}: {slots: number; contextPerSlot: number; threads: number; gpu?: boolean}): Promise<RunningLlamaServer> {
  const port = await getPort()
  const args = ['-m', modelPath, '--host', '127.0.0.1', '--port', String(port), '-t', String(threads), '--parallel', String(slots), '-c', String(slots * contextPerSlot), '--no-webui']
  if (gpu) args.push('-ngl', '999')
  const child = execa(binary, args, {all: true, buffer: false, reject: false})
  let output = ''
  child.all!.on('data', (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-4000)
  })
  let exited = false
  void child.then(() => (exited = true))
  const url = `http://127.0.0.1:${port}`
  for (let attempt = 0; ; attempt++) {
    if (exited) throw new Error(`llama-server exited:\n${output}`)
    const healthy = await fetch(`${url}/health`).then(
      (response) => response.ok,
      () => false,
    )
    if (healthy) break
    if (attempt > 600) throw new Error(`llama-server did not become healthy in 60 s:\n${output}`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }

  return {
    process: child,
    async stop() {
      child.kill('SIGTERM')
      await child
    },
    url: `${url}/v1`,
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const {values} = parseArgs({options: {gpu: {default: false, type: 'boolean'}}})
  console.log(await ensureLlamaServer({gpu: values.gpu}))
}
