/**
 * Download throughput of the model hub code against the local hub (test/helpers/fake-hub.ts, run as a
 * process of its own), next to a plain `curl` of the same file from the same server in the same run, so the
 * two numbers differ only by the client. The service's path includes what curl skips: the file listing,
 * SHA-256 over every byte and fdatasync before the file is moved into place; `curl+fdatasync` adds the last
 * of these to curl's time, since on most disks durable writing, not the network, is what limits both.
 *
 *     node --import tsx bench/hub-download.ts [--runs 3] [--size medium|small]
 */
import {execa} from 'execa'
import {mkdtemp, rm} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {parseArgs} from 'node:util'

import {WeightStore} from '../src/weights/store.js'
import {RANDOM_LLAMA_SIZES, writeRandomLlamaGguf} from '../plugins/engine-llama-cpp/src/gguf/random-llama.js'

const {values} = parseArgs({options: {runs: {default: '3', type: 'string'}, size: {default: 'medium', type: 'string'}}})
const runs = Number(values.runs)
const size = values.size as keyof typeof RANDOM_LLAMA_SIZES
const quiet = {debug() {}, error() {}, info() {}, warn() {}}
const median = (numbers: number[]) => [...numbers].sort((a, b) => a - b)[Math.floor(numbers.length / 2)]

const directory = await mkdtemp(join(tmpdir(), 'hub-bench-'))
try {
  const model = join(directory, 'model.gguf')
  const {bytes} = await writeRandomLlamaGguf(model, RANDOM_LLAMA_SIZES[size])
  const server = execa('node', ['--import', 'tsx', join(import.meta.dirname, 'fake-hub-server.ts'), `bench/model-GGUF/model-f32.gguf=${model}`], {buffer: false, cwd: import.meta.dirname})
  const hub = await new Promise<{url: string; repos: Record<string, string>}>((resolve) => server.stdout.once('data', (chunk: Buffer) => resolve(JSON.parse(chunk.toString()))))
  const url = `${hub.url}/bench/model-GGUF/resolve/${hub.repos['bench/model-GGUF']}/model-f32.gguf`
  const spec = {
    model_file_name_split_template: null,
    model_file_name_template: 'model-{quantization}.gguf',
    model_format: 'ggufv2',
    model_hub: 'huggingface',
    model_id: 'bench/model-GGUF',
    model_revision: null,
    model_size_in_billions: '0_1',
    model_uri: null,
    quantization: 'f32',
    quantization_parts: null,
  }
  const results = {curl: [] as number[], 'curl+fdatasync': [] as number[], service: [] as number[]}
  for (let run = 0; run < runs; run++) {
    // Each run starts with nothing left for the disk to write back, so neither pays for the other's writes.
    await execa('sync')
    const curlTarget = join(directory, `curl-${run}.gguf`)
    let started = performance.now()
    await execa('curl', ['-sSfL', '-o', curlTarget, url])
    results.curl.push(bytes / 1e6 / ((performance.now() - started) / 1000))
    // The service makes its file durable before it counts as cached; this is curl paying the same.
    await execa('sync', ['--data', curlTarget])
    results['curl+fdatasync'].push(bytes / 1e6 / ((performance.now() - started) / 1000))
    await rm(curlTarget)

    await execa('sync')
    const cacheDir = join(directory, `cache-${run}`)
    started = performance.now()
    await new WeightStore({cacheDir, env: {HF_ENDPOINT: hub.url}, log: quiet}).resolve({modelName: 'bench', spec})
    results.service.push(bytes / 1e6 / ((performance.now() - started) / 1000))
    await rm(cacheDir, {force: true, recursive: true})
  }

  server.kill('SIGTERM')
  await server.catch(() => {})
  console.log(`file: ${(bytes / 1e6).toFixed(1)} MB (${size} test model), ${runs} runs each, alternating; median (all runs) in MB/s`)
  for (const [name, speeds] of Object.entries(results)) console.log(`${name.padEnd(15)} ${median(speeds).toFixed(0).padStart(6)}   (${speeds.map((s) => s.toFixed(0)).join(', ')})`)
  console.log(`service / curl: ${(median(results.service) / median(results.curl)).toFixed(2)}; service / curl+fdatasync: ${(median(results.service) / median(results['curl+fdatasync'])).toFixed(2)}`)
} finally {
  await rm(directory, {force: true, recursive: true})
}
