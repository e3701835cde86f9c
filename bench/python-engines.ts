/**
 * What our API costs in front of a Python engine's own OpenAI-compatible server: the Transformers engine on the
 * built-in tiny-random-llm (pytorch, float32), launched through a real service-local, streamed with the official
 * openai client (a) through our API at the service's port and (b) straight at the engine's program, the very
 * host.py process the service started, on its private port (found from the process list: the host.py whose
 * arguments name this service's home). Runs alternate ours/direct, at 1 and 4 concurrent streams; each side reports
 * medians (min–max) of output tokens/s per round and TTFT per request. Greedy, fixed max_tokens with ignore_eos, so
 * both sides generate the same tokens. The engine's environment comes from the test cache (nothing new is installed
 * once the Transformers engine's test has run). Runs alone with `node --import tsx bench/python-engines.ts`
 * (`--repeats 9 --concurrency 1,4 --max-tokens 128`; `npm run bench` runs it with its own --repeats), and as part of `npm run bench`.
 */
import {readdir, readFile} from 'node:fs/promises'
import {cpus, loadavg} from 'node:os'
import {join} from 'node:path'
import {parseArgs} from 'node:util'
import OpenAI from 'openai'

import {TEST_CACHE, uvFromPyPI} from '../test/helpers/python-tools.js'
import {callApi, type RunningService, servicectl, startService} from '../test/helpers/service.js'
import {describeRounds, type Measured, PROMPT, type Round, type Sample, sampleFrom, show} from './measure.js'

const MODEL = 'tiny-random-llm'

export interface PythonEngineOptions {
  concurrency: number[]
  maxTokens: number
  repeats: number
}

/** What a service needs to find (or make) the engine's environment in the cache the tests use. */
export async function pythonEngineServiceEnv(): Promise<Record<string, string>> {
  return {PATH: `${await uvFromPyPI()}:${process.env.PATH}`, SERVICE_VIRTUALENV_DIR: join(TEST_CACHE, 'virtualenv')}
}

/** The port of the host.py this service started for `uid`: the process whose arguments name the service's home. */
async function enginePort(service: RunningService, uid: string): Promise<number> {
  for (const pid of await readdir('/proc')) {
    if (!/^\d+$/.test(pid)) continue
    const args = await readFile(`/proc/${pid}/cmdline`, 'utf8').then((text) => text.split('\0'), () => [] as string[])
    if (!args.some((arg) => arg.endsWith('host.py')) || !args.includes(uid) || !args.some((arg) => arg.includes(service.home))) continue
    return Number(args[args.indexOf('--port') + 1])
  }

  throw new Error(`no host.py for ${uid} under ${service.home} in the process list`)
}

/** One streamed greedy chat completion of exactly `maxTokens` tokens with the official client, timed on the client. */
async function streamOnce(client: OpenAI, maxTokens: number): Promise<Sample> {
  const start = performance.now()
  const stream = await client.chat.completions.create({
    // ignore_eos is vLLM's (and ours, and host.py's) extension: the random model would otherwise stop anywhere.
    ...({ignore_eos: true} as object),
    max_tokens: maxTokens,
    messages: [{content: PROMPT, role: 'user'}],
    model: MODEL,
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

/** CPU time (user + system, ms) a process has used so far. */
async function cpuMs(pid: number): Promise<number> {
  const fields = (await readFile(`/proc/${pid}/stat`, 'utf8')).split(') ')[1].split(' ')
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100
}

async function round(client: OpenAI, concurrency: number, maxTokens: number): Promise<Round> {
  const start = performance.now()
  const samples = await Promise.all(Array.from({length: concurrency}, () => streamOnce(client, maxTokens)))
  return {samples, wall: performance.now() - start}
}

export async function benchPythonEngines(service: RunningService, print: (line: string) => void, options: PythonEngineOptions): Promise<Record<string, unknown>> {
  const launchStart = performance.now()
  const launched = await servicectl(['launch', '-n', MODEL, '--model-engine', 'transformers', '-f', 'pytorch', '--dtype', 'float32', '-e', service.url])
  if (launched.exitCode !== 0) throw new Error(launched.stderr)
  const launchMs = performance.now() - launchStart
  const port = await enginePort(service, MODEL)
  const ours = new OpenAI({apiKey: 'unused', baseURL: `${service.url}/v1`, maxRetries: 0})
  const direct = new OpenAI({apiKey: 'unused', baseURL: `http://127.0.0.1:${port}/v1`, maxRetries: 0})
  const results: Record<string, unknown> = {engine_port: port, load_average: loadavg(), launch_ms: launchMs, max_tokens: options.maxTokens, repeats: options.repeats}
  print(`\ntransformers engine, ${MODEL} (pytorch, float32, CPU), ${options.maxTokens} greedy tokens streamed with the openai client; ours = our API, direct = host.py on its own port ${port}; alternating, ${options.repeats} rounds each`)
  print('streams | ours tok/s        | direct tok/s      | ours/direct | ours TTFT ms     | direct TTFT ms   | ΔTTFT ms | ours ITL ms      | direct ITL ms    | service CPU ms/token')
  print(`load average ${loadavg().map((n) => n.toFixed(2)).join(' ')} on ${cpus().length} cores`)
  try {
    for (const concurrency of options.concurrency) {
      // A warm-up on each side, then rounds in turn: ours, direct, direct, ours, ours, direct…
      await round(ours, concurrency, options.maxTokens)
      await round(direct, concurrency, options.maxTokens)
      const oursRounds: Round[] = []
      const directRounds: Round[] = []
      let serviceCpu = 0
      for (let i = 0; i < options.repeats; i++) {
        // Which side goes first alternates too, so a burst of other work on the machine does not favour one side.
        if (i % 2 === 1) directRounds.push(await round(direct, concurrency, options.maxTokens))
        const before = await cpuMs(service.process.pid!)
        oursRounds.push(await round(ours, concurrency, options.maxTokens))
        serviceCpu += (await cpuMs(service.process.pid!)) - before
        if (i % 2 === 0) directRounds.push(await round(direct, concurrency, options.maxTokens))
      }

      const a: Measured = describeRounds(oursRounds)
      const b: Measured = describeRounds(directRounds)
      const tokens = new Set([...oursRounds, ...directRounds].flatMap((r) => r.samples.map((s) => s.tokens)))
      if (tokens.size !== 1) throw new Error(`the runs did not all produce the same number of tokens: ${[...tokens].join(', ')}`)
      // What the service itself spent per token it relayed: on a machine with few cores, that CPU is the engine's loss.
      const serviceCpuPerToken = serviceCpu / (options.repeats * concurrency * options.maxTokens)
      results[`c${concurrency}`] = {direct: b, ours: a, service_cpu_ms_per_token: serviceCpuPerToken, ratio: a.tokens_per_s.median / b.tokens_per_s.median, ttft_delta_ms: a.ttft_ms.median - b.ttft_ms.median}
      print(
        [
          String(concurrency).padStart(7),
          show(a.tokens_per_s).padEnd(17),
          show(b.tokens_per_s).padEnd(17),
          (a.tokens_per_s.median / b.tokens_per_s.median).toFixed(3).padEnd(11),
          show(a.ttft_ms).padEnd(16),
          show(b.ttft_ms).padEnd(16),
          (a.ttft_ms.median - b.ttft_ms.median).toFixed(1).padStart(8),
          show(a.itl_ms, 2).padEnd(16),
          show(b.itl_ms, 2).padEnd(16),
          serviceCpuPerToken.toFixed(3),
        ].join(' | '),
      )
    }
  } finally {
    await callApi(service, 'DELETE', `/v1/models/${MODEL}`)
  }

  return results
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const {values} = parseArgs({options: {concurrency: {default: '1,4', type: 'string'}, 'max-tokens': {default: '128', type: 'string'}, repeats: {default: '9', type: 'string'}}})
  const service = await startService({env: await pythonEngineServiceEnv()})
  try {
    await benchPythonEngines(service, console.log, {concurrency: values.concurrency.split(',').map(Number), maxTokens: Number(values['max-tokens']), repeats: Number(values.repeats)})
    console.log(`load average after: ${loadavg().map((n) => n.toFixed(2)).join(' ')}`)
  } finally {
    await service.stop()
  }
}
