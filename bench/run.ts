/**
 * `npm run bench`: serving speed of our API against our engine used in-process (bench/engine-direct.ts), in the
 * same run, on generated models of three sizes. Prints medians (min–max) and writes JSON to bench/results/.
 *
 *   npm run bench                                   all sizes, 1/2/4/8 concurrent streams
 *   npm run bench -- --sizes small --concurrency 1,4 --repeats 5
 *   npm run bench -- --target http://127.0.0.1:8080/v1 --model qwen   also run the workload against any
 *                                                   OpenAI-compatible server and print the ratios
 *
 * Metrics: see measure.ts.
 */
import {mkdir, readFile, rm, writeFile} from 'node:fs/promises'
import {cpus} from 'node:os'
import {join} from 'node:path'
import {parseArgs} from 'node:util'

import {execa} from 'execa'

import {RANDOM_LLAMA_SIZES, writeRandomLlamaGguf} from '../plugins/engine-llama-cpp/src/gguf/random-llama.js'
import {callApi, ROOT, servicectl, startService, temporaryDirectory} from '../test/helpers/service.js'
import {benchFlexibleOnnx} from './flexible-onnx.js'
import {benchImageDiffusers, diffusersServiceEnv} from './image-diffusers.js'
import {benchImageStableDiffusionCpp} from './image-stable-diffusion-cpp.js'
import {benchPythonEngines} from './python-engines.js'
import {comparedCells, describeRounds, MAX_TOKENS, type Measured, median, printTable, type Round, rounds, show, streamChat, summary} from './measure.js'

const {values: options} = parseArgs({
  options: {
    concurrency: {default: '1,2,4,8', type: 'string'},
    model: {type: 'string'},
    repeats: {default: '3', type: 'string'},
    sizes: {default: 'tiny,small,medium', type: 'string'},
    target: {type: 'string'},
    threads: {type: 'string'},
  },
})
const LAUNCH_PARAMETERS = {n_ctx: 1024, n_parallel: 8}
const sizes = options.sizes.split(',') as Array<keyof typeof RANDOM_LLAMA_SIZES>
const levels = options.concurrency.split(',').map(Number)
const repeats = Number(options.repeats)

/**
 * The same workload on our engine in-process, without the service: the engine's host module loaded in a child
 * process that starts as the kernel starts model processes (the engine's environment), and called directly.
 */
async function engineDirect(modelPath: string, concurrency: number, threads: number | undefined): Promise<Measured> {
  const {default: register} = await import('../plugins/engine-llama-cpp/src/register.js')
  const [engine] = (await register({} as never)).engines!
  const result = await execa('node', ['--import', 'tsx', join(ROOT, 'bench/engine-direct.ts')], {
    env: {...engine.processEnvironment},
    input: JSON.stringify({concurrency, modelPath, parameters: {...LAUNCH_PARAMETERS, ...(threads ? {n_threads: threads} : {})}, repeats}),
  })
  return describeRounds(JSON.parse(result.stdout) as Round[])
}

/** node-llama-cpp's load in this process, where it is already imported: getLlama, loadModel, createContext. */
async function loadInProcess(modelPath: string): Promise<number> {
  const {getLlama} = await import('node-llama-cpp')
  const start = performance.now()
  const llama = await getLlama({build: 'never', gpu: false})
  const model = await llama.loadModel({modelPath})
  const context = await model.createContext({contextSize: 1024, sequences: 8, threads: 1})
  const elapsed = performance.now() - start
  await context.dispose()
  await model.dispose()
  await llama.dispose()
  return elapsed
}

/** What a launch has to do at least, done by a plain script (load-in-new-process.mjs), timed from spawn until ready. */
async function loadInNewProcess(modelPath: string): Promise<number> {
  const start = performance.now()
  const child = execa('node', [join(ROOT, 'bench/load-in-new-process.mjs'), modelPath], {env: {NODE_COMPILE_CACHE: undefined}})
  for await (const line of child) if (line === 'ready') break
  const elapsed = performance.now() - start
  await child
  return elapsed
}

async function rssOf(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8')
  return Number(/VmRSS:\s+(\d+)/.exec(status)![1]) / 1024
}

async function wallTime(args: string[], env: Record<string, string>): Promise<number[]> {
  const times: number[] = []
  for (let i = 0; i < repeats + 1; i++) {
    const start = performance.now()
    const result = await servicectl(args, {env})
    if (result.exitCode !== 0) throw new Error(result.stderr)
    if (i > 0) times.push(performance.now() - start)
  }

  return times
}

async function main() {
  const work = await temporaryDirectory('service-bench-')
  const service = await startService({env: await diffusersServiceEnv()})
  const env = {SERVICE_ENDPOINT: service.url}
  const results: Record<string, unknown> = {cpus: cpus().length, max_tokens: MAX_TOKENS, node: process.version, repeats}
  const lines: string[] = []
  const print = (line: string) => {
    lines.push(line)
    console.log(line)
  }

  try {
    await new Promise((resolve) => setTimeout(resolve, 500))
    const idle = await rssOf(service.process.pid!)
    results.cli = {list_ms: summary(await wallTime(['list'], env)), version_ms: summary(await wallTime(['--version'], env))}
    print(`servicectl list ${show((results.cli as any).list_ms, 0)} ms, --version ${show((results.cli as any).version_ms, 0)} ms; idle service RSS ${idle.toFixed(0)} MB`)
    results.idle_rss_mb = idle

    for (const size of sizes) {
      const modelPath = join(work, `${size}.gguf`)
      const written = await writeRandomLlamaGguf(modelPath, RANDOM_LLAMA_SIZES[size])
      const name = `bench-${size}`
      const family = {model_name: name, model_specs: [{model_format: 'ggufv2', model_size_in_billions: 1, model_uri: `file://${modelPath}`, quantization: 'f32'}]}
      await callApi(service, 'POST', '/v1/model_registrations/LLM', {model: family, persist: false})
      const launch = async () => {
        const start = performance.now()
        const launched = await callApi(service, 'POST', '/v1/models', {model_engine: 'llama.cpp', model_name: name, ...LAUNCH_PARAMETERS, ...(options.threads ? {n_threads: Number(options.threads)} : {})})
        if (launched.status !== 200) throw new Error(JSON.stringify(launched.body))
        return performance.now() - start
      }

      const launches: number[] = []
      for (let i = 0; i < 3; i++) {
        if (i > 0) await callApi(service, 'DELETE', `/v1/models/${name}`)
        launches.push(await launch())
      }

      const launchMs = median(launches)
      const loadMs = await loadInProcess(modelPath)
      const newProcessMs = median([await loadInNewProcess(modelPath), await loadInNewProcess(modelPath), await loadInNewProcess(modelPath)])
      const {pid} = (await callApi(service, 'GET', `/v1/models/${name}`)).body
      const instanceRss = await rssOf(pid)
      print(`\n${size}: ${(written.parameters / 1e6).toFixed(1)}M params, ${(written.bytes / 1e6).toFixed(1)} MB; launch to ready ${launchMs.toFixed(0)} ms vs node-llama-cpp loading it in a new process ${newProcessMs.toFixed(0)} ms (×${(launchMs / newProcessMs).toFixed(2)}), in this one after its import ${loadMs.toFixed(0)} ms (×${(launchMs / loadMs).toFixed(2)}); instance RSS ${instanceRss.toFixed(0)} MB`)
      const printRow = printTable(print, [
        'streams',
        {header: 'ours tok/s', width: 17},
        {header: 'engine tok/s', width: 17},
        'ours/engine',
        'ours TTFT ms',
        {header: 'engine TTFT ms', width: 14},
        'ours TPOT ms',
        'ours ITL ms',
        ...(options.target ? ['target tok/s', 'ours/target', 'target TTFT ms'] : []),
      ])
      const bySize: Record<string, unknown> = {bytes: written.bytes, instance_rss_mb: instanceRss, launch_ms: launchMs, load_ms: loadMs, load_new_process_ms: newProcessMs, parameters: written.parameters}
      for (const concurrency of levels) {
        const ours = describeRounds(await rounds(() => streamChat(`${service.url}/v1`, {model: name}), concurrency, repeats))
        const engine = await engineDirect(modelPath, concurrency, options.threads ? Number(options.threads) : undefined)
        const target = options.target ? describeRounds(await rounds(() => streamChat(options.target!, {ignore_eos: true, model: options.model ?? name}), concurrency, repeats)) : undefined
        bySize[`c${concurrency}`] = {engine, ours, target}
        printRow([
          ...comparedCells(concurrency, ours, engine),
          show(ours.tpot_ms, 2),
          show(ours.itl_ms, 2),
          ...(target ? [show(target.tokens_per_s), (ours.tokens_per_s.median / target.tokens_per_s.median).toFixed(2), show(target.ttft_ms)] : []),
        ])
      }

      results[size] = bySize
      await callApi(service, 'DELETE', `/v1/models/${name}`)
      await rm(modelPath, {force: true})
    }

    results.flexible_onnx = await benchFlexibleOnnx(service, print)
    results.image_diffusers = await benchImageDiffusers(service, print)
    results.image_stable_diffusion_cpp = await benchImageStableDiffusionCpp(service, print)
    results.python_engines = await benchPythonEngines(service, print, {concurrency: [1, 4], maxTokens: MAX_TOKENS, repeats})
  } finally {
    await service.stop()
    await rm(work, {force: true, recursive: true})
  }

  const directory = join(ROOT, 'bench/results')
  await mkdir(directory, {recursive: true})
  const file = join(directory, `${new Date().toISOString().replaceAll(':', '-')}.json`)
  await writeFile(file, JSON.stringify({...results, table: lines}, null, 2))
  console.log(`\nwrote ${file}`)
}

await main()
