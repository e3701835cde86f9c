/**
 * What our API costs in front of a Python engine's own OpenAI-compatible server: the Transformers engine on the
 * built-in tiny-random-llm (pytorch, float32), launched through a real service-local, streamed with the official
 * openai client (a) through our API at the service's port and (b) straight at the engine's program, the very
 * process the service started, on its private port (found from the process list: the program whose arguments name
 * the model's uid, this service's home and a --port). Runs alternate ours/direct, at 1 and 4 concurrent streams; each
 * side reports medians (min–max) of output tokens/s per round and TTFT per request. Greedy, fixed max_tokens with
 * ignore_eos, so both sides generate the same tokens. The engines' environments come from the test cache (nothing
 * new is installed once the engines' tests have run). Runs alone with `node --import tsx bench/python-engines.ts`
 * (`--repeats 9 --concurrency 1,4 --max-tokens 128`, `--threads N` for torch's threads in host.py; `--engines transformers,vllm` adds vLLM on the CPU as
 * test/e2e/vllm-cpu.test.ts runs it, which takes minutes to start), and as part of `npm run bench` (Transformers only,
 * with the bench's --repeats).
 */
import {readdir, readFile} from 'node:fs/promises'
import {cpus, loadavg} from 'node:os'
import {join} from 'node:path'
import {parseArgs} from 'node:util'
import OpenAI from 'openai'

import {TEST_CACHE, uvFromPyPI} from '../test/helpers/python-tools.js'
import {callApi, type RunningService, servicectl, startService} from '../test/helpers/service.js'
import {comparedCells, describeRounds, type Measured, printTable, processUsage, PROMPT, type Round, type Sample, sampleFrom, show} from './measure.js'

const MODEL = 'tiny-random-llm'

export interface PythonEngineOptions {
  concurrency: number[]
  maxTokens: number
  repeats: number
  /** torch's CPU threads in host.py (`--n_threads`); torch's own choice (a thread a core) unless given. */
  threads?: number
}

/** What a service needs to find (or make) the engine's environment in the cache the tests use. */
export async function pythonEngineServiceEnv(): Promise<Record<string, string>> {
  return {PATH: `${await uvFromPyPI()}:${process.env.PATH}`, SERVICE_VIRTUALENV_DIR: join(TEST_CACHE, 'virtualenv')}
}

/**
 * The private port of the engine's program this service started for `uid`: the process whose arguments name the
 * uid, the service's home (the model's files are there) and a `--port` (vLLM's own worker processes have none).
 */
async function enginePort(service: RunningService, uid: string): Promise<number> {
  for (const pid of await readdir('/proc')) {
    if (!/^\d+$/.test(pid)) continue
    const args = await readFile(`/proc/${pid}/cmdline`, 'utf8').then((text) => text.split('\0'), () => [] as string[])
    if (!args.includes(uid) || !args.includes('--port') || !args.some((arg) => arg.includes(service.home))) continue
    return Number(args[args.indexOf('--port') + 1])
  }

  throw new Error(`no program for ${uid} under ${service.home} in the process list`)
}

/** One streamed greedy chat completion of exactly `maxTokens` tokens with the official client, timed on the client. */
async function streamOnce(client: OpenAI, model: string, maxTokens: number): Promise<Sample> {
  const start = performance.now()
  const stream = await client.chat.completions.create({
    // ignore_eos is vLLM's (and ours, and host.py's) extension: the random model would otherwise stop anywhere.
    ...({ignore_eos: true} as object),
    max_tokens: maxTokens,
    messages: [{content: PROMPT, role: 'user'}],
    model,
    stream: true,
    stream_options: {include_usage: true},
    temperature: 0,
  })
  const stamps: number[] = []
  let tokens = 0
  for await (const chunk of stream) {
    if (chunk.choices[0]?.delta?.content) stamps.push(performance.now())
    if (chunk.usage) tokens = chunk.usage.completion_tokens
  }

  return sampleFrom(start, stamps, performance.now(), tokens || stamps.length)
}

async function round(client: OpenAI, model: string, concurrency: number, maxTokens: number): Promise<Round> {
  const start = performance.now()
  const samples = await Promise.all(Array.from({length: concurrency}, () => streamOnce(client, model, maxTokens)))
  return {samples, wall: performance.now() - start}
}

/** The Transformers engine on tiny-random-llm, launched with servicectl; the comparison; the model terminated. */
export async function benchPythonEngines(service: RunningService, print: (line: string) => void, options: PythonEngineOptions): Promise<Record<string, unknown>> {
  const threads = options.threads ? ['--n_threads', String(options.threads)] : []
  const launched = await servicectl(['launch', '-n', MODEL, '--model-engine', 'transformers', '-f', 'pytorch', '--dtype', 'float32', ...threads, '-e', service.url])
  if (launched.exitCode !== 0) throw new Error(launched.stderr)
  const label = `transformers engine, ${MODEL} (pytorch, float32, CPU, ${options.threads ?? "torch's default"} threads)`
  return compareWithEngine(service, print, options, {label, program: 'host.py', uid: MODEL})
}

/** vLLM on the CPU (its environment from the test cache) on a tiny safetensors Llama from a local hub, as test/e2e/vllm-cpu.test.ts runs it. */
async function benchVllm(print: (line: string) => void, options: PythonEngineOptions): Promise<Record<string, unknown>> {
  const {FakeHub} = await import('../test/helpers/fake-hub.js')
  const {writeSafetensorsLlama} = await import('../test/helpers/safetensors-llama.js')
  const {temporaryDirectory} = await import('../test/helpers/service.js')
  const uid = 'tiny-llama-safetensors'
  const directory = await temporaryDirectory()
  const files = await writeSafetensorsLlama(directory)
  const hub = await FakeHub.start()
  await hub.addRepo('test-org/tiny-llama', Object.fromEntries(files.map((name) => [name, join(directory, name)])))
  const service = await startService({env: {...(await pythonEngineServiceEnv()), HF_ENDPOINT: hub.url}})
  try {
    const family = {
      context_length: 2048,
      model_ability: ['chat', 'generate'],
      model_lang: ['en'],
      model_name: uid,
      model_specs: [{model_format: 'pytorch', model_size_in_billions: '0_001', model_src: {huggingface: {model_id: 'test-org/tiny-llama', quantizations: ['none']}}}],
    }
    await callApi(service, 'POST', '/v1/model_registrations/LLM', {model: family, persist: false})
    const launched = await servicectl(['launch', '-n', uid, '--model-engine', 'vllm', '-f', 'pytorch', '--max_model_len', '512', '--enforce_eager', 'true', '--cpu_kvcache_space', '1', '-e', service.url])
    if (launched.exitCode !== 0) throw new Error(launched.stderr)
    return await compareWithEngine(service, print, options, {label: `vLLM (vllm-cpu), ${uid} (safetensors, CPU, enforce_eager)`, program: "vLLM's OpenAI server", uid})
  } finally {
    await service.stop()
    await hub.stop()
  }
}

/** Alternating rounds through our API and straight at the engine's program, at each concurrency; then terminates the model. */
async function compareWithEngine(
  service: RunningService,
  print: (line: string) => void,
  options: PythonEngineOptions,
  {label, program, uid}: {label: string; program: string; uid: string},
): Promise<Record<string, unknown>> {
  const model = uid
  const port = await enginePort(service, uid)
  const ours = new OpenAI({apiKey: 'unused', baseURL: `${service.url}/v1`, maxRetries: 0})
  // One retry for the direct side alone: vLLM's uvicorn closes a connection idle for 5 s, and a round that starts as it
  // does fails on the client's side of that race, which the service's relay retries itself (event-stream-upstream.ts).
  const direct = new OpenAI({apiKey: 'unused', baseURL: `http://127.0.0.1:${port}/v1`, maxRetries: 1})
  const results: Record<string, unknown> = {engine_port: port, load_average: loadavg(), max_tokens: options.maxTokens, repeats: options.repeats}
  print(`\n${label}, ${options.maxTokens} greedy tokens streamed with the openai client; ours = our API, direct = ${program} on its own port ${port}; alternating, ${options.repeats} rounds each`)
  print(`load average ${loadavg().map((n) => n.toFixed(2)).join(' ')} on ${cpus().length} cores`)
  const printRow = printTable(print, [
    'streams',
    {header: 'ours tok/s', width: 17},
    {header: 'direct tok/s', width: 17},
    'ours/direct',
    {header: 'ours TTFT ms', width: 16},
    {header: 'direct TTFT ms', width: 16},
    'ΔTTFT ms',
    {header: 'ours ITL ms', width: 16},
    {header: 'direct ITL ms', width: 16},
    'service CPU ms/token',
    'service wake-ups/token',
  ])
  try {
    for (const concurrency of options.concurrency) {
      // A warm-up on each side, then rounds in turn: ours, direct, direct, ours, ours, direct…
      await round(ours, model, concurrency, options.maxTokens)
      await round(direct, model, concurrency, options.maxTokens)
      const oursRounds: Round[] = []
      const directRounds: Round[] = []
      let serviceCpu = 0
      let serviceWakeUps = 0
      for (let i = 0; i < options.repeats; i++) {
        // Which side goes first alternates too, so a burst of other work on the machine does not favour one side.
        if (i % 2 === 1) directRounds.push(await round(direct, model, concurrency, options.maxTokens))
        const before = await processUsage(service.process.pid!)
        oursRounds.push(await round(ours, model, concurrency, options.maxTokens))
        const after = await processUsage(service.process.pid!)
        serviceCpu += after.cpuMs - before.cpuMs
        serviceWakeUps += after.wakeUps - before.wakeUps
        if (i % 2 === 0) directRounds.push(await round(direct, model, concurrency, options.maxTokens))
      }

      const a: Measured = describeRounds(oursRounds)
      const b: Measured = describeRounds(directRounds)
      const tokens = new Set([...oursRounds, ...directRounds].flatMap((r) => r.samples.map((s) => s.tokens)))
      if (tokens.size !== 1) throw new Error(`the runs did not all produce the same number of tokens: ${[...tokens].join(', ')}`)
      // What the service itself spent per token it relayed: on a machine with few cores, that CPU is the engine's loss.
      const tokensRelayed = options.repeats * concurrency * options.maxTokens
      const serviceCpuPerToken = serviceCpu / tokensRelayed
      results[`c${concurrency}`] = {direct: b, ours: a, service_cpu_ms_per_token: serviceCpuPerToken, service_wake_ups_per_token: serviceWakeUps / tokensRelayed, ratio: a.tokens_per_s.median / b.tokens_per_s.median, ttft_delta_ms: a.ttft_ms.median - b.ttft_ms.median}
      printRow([
        ...comparedCells(concurrency, a, b, 3),
        (a.ttft_ms.median - b.ttft_ms.median).toFixed(1).padStart(8),
        show(a.itl_ms, 2),
        show(b.itl_ms, 2),
        serviceCpuPerToken.toFixed(3),
        (serviceWakeUps / tokensRelayed).toFixed(2),
      ])
    }
  } finally {
    await callApi(service, 'DELETE', `/v1/models/${uid}`)
  }

  return results
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const {values} = parseArgs({
    options: {concurrency: {default: '1,4', type: 'string'}, engines: {default: 'transformers', type: 'string'}, 'max-tokens': {default: '128', type: 'string'}, repeats: {default: '9', type: 'string'}, threads: {type: 'string'}},
  })
  const options = {concurrency: values.concurrency.split(',').map(Number), maxTokens: Number(values['max-tokens']), repeats: Number(values.repeats), threads: values.threads ? Number(values.threads) : undefined}
  const engines = values.engines.split(',')
  if (engines.includes('transformers')) {
    const service = await startService({env: await pythonEngineServiceEnv()})
    try {
      await benchPythonEngines(service, console.log, options)
    } finally {
      await service.stop()
    }
  }

  if (engines.includes('vllm')) await benchVllm(console.log, options)
  console.log(`load average after: ${loadavg().map((n) => n.toFixed(2)).join(' ')}`)
}
