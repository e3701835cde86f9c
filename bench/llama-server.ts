/**
 * Our API (llama.cpp engine, launched with as many parallel sequences as llama-server has slots) against
 * llama.cpp's own llama-server (bench/llama-server-binary.ts builds it from the source node-llama-cpp bundles),
 * the two sides alternating within one run on the same generated GGUF, both greedy with ignore_eos:
 *
 *   (a) 1 and 4 concurrent streams (4 slots each side);
 *   (b) 16 and 64 concurrent streams with as many slots: aggregate tok/s, p99 TTFT, errors; and 4 requests per slot
 *       (64 on 16): the spread of waits (TTFT), and how far the order of first tokens is from the order requests
 *       were sent (Spearman's rho; requests whose first token came in another wave of n_parallel than FIFO's);
 *   (c) a ~2,000-token prompt's TTFT, then the conversation's second turn (history + reply + a short question),
 *       whose TTFT shows whether the cached prefix was reused.
 *
 *   node --import tsx bench/llama-server.ts [--sizes small,medium] [--repeats 3] [--gpu] [--load-tokens N]
 *     [--streams 1,4,16,64] [--skip-long-prompt] [--image NAME] [--threads N]
 *
 * Both sides compute on every core unless --threads N sets llama-server's -t and our model's n_threads alike.
 * --image runs both sides in containers of an image built with llama-server in it (`npm run bench:image`;
 * bench/image-servers.ts) instead of here.
 *
 * Part of `npm run bench`. --gpu compares node-llama-cpp's CUDA binaries (all layers offloaded) with a
 * llama-server built with -DGGML_CUDA=ON, on a generated 0.5B model unless --sizes says otherwise. The GPU and
 * driver (nvidia-smi), the load average before and after, and which llama.cpp binaries our engine loads go to
 * the JSON in bench/results/.
 */
import {execa} from 'execa'
import {mkdir, rm, writeFile} from 'node:fs/promises'
import {cpus, loadavg} from 'node:os'
import {join} from 'node:path'
import {parseArgs} from 'node:util'

import {RANDOM_LLAMA_SIZES, type RandomLlamaOptions, writeRandomLlamaGguf} from '../plugins/engine-llama-cpp/src/gguf/random-llama.js'
import {FIND_PORTABLE_BUILD, loadedCpuVariant} from '../plugins/engine-llama-cpp/src/portable-build.js'
import {callApi, ROOT, type RunningService, startService, temporaryDirectory} from '../test/helpers/service.js'
import {startImageLlamaServer, startImageService} from './image-servers.js'
import {bundledRelease, ensureLlamaServer, startLlamaServer} from './llama-server-binary.js'
import {type ChatSample, describeRounds, MAX_TOKENS, median, PROMPT, queueOrder, type Round, show, streamChat, summary} from './measure.js'

const {values: options} = parseArgs({
  options: {
    gpu: {default: false, type: 'boolean'},
    image: {type: 'string'},
    'load-tokens': {type: 'string'},
    'prompt-tokens': {default: '2000', type: 'string'},
    repeats: {default: '3', type: 'string'},
    sizes: {type: 'string'},
    'skip-long-prompt': {default: false, type: 'boolean'},
    streams: {default: '1,4,16,64', type: 'string'},
    threads: {type: 'string'},
  },
})
const repeats = Number(options.repeats)
/** The stream counts to run (`--streams`): a cell of (a) or (b) runs when its number of streams is listed. */
const streamCounts = new Set(options.streams.split(',').map(Number))
/** llama-server's -t: every core unless --threads says, which then sets our model's n_threads too. */
const threads = Number(options.threads ?? cpus().length)
/** A 0.5B-parameter model for GPUs (1.9 GB in F32), shaped like the small Qwen and Llama models. */
const SIZES: Record<string, Readonly<RandomLlamaOptions>> = {
  ...RANDOM_LLAMA_SIZES,
  gpu: {blockCount: 16, contextLength: 4096, embeddingLength: 1536, feedForwardLength: 4096, headCount: 12, headCountKv: 4, name: 'random-llama-gpu', vocabSize: 32_000},
}
const sizes = (options.sizes ?? (options.gpu ? 'gpu' : 'small,medium')).split(',')
/** Tokens per stream under load: 64 streams of 128 tokens would take minutes a round on 2 cores. */
const loadTokens = (size: string) => Number(options['load-tokens'] ?? (size === 'small' ? 64 : 32))

/** Where the two sides run: the service and llama-server here, or both in containers of `--image`. */
interface Servers {
  service: {url: string}
  startLlamaServer(modelPath: string, shape: {contextPerSlot: number; slots: number}): Promise<{url: string; stop(): Promise<void>}>
}

interface Side {
  name: 'ours' | 'llama-server'
  url: string
  model: string
}

const percentile = (values: number[], p: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.ceil((p / 100) * values.length) - 1)]
const ratio = (ours: number, theirs: number) => (ours / theirs).toFixed(2)

/** Runs `once` on each side `repeats` times, alternating which side goes first, after a short warm-up stream on each. */
async function alternate<T>(sides: Side[], once: (side: Side) => Promise<T>): Promise<Record<Side['name'], T[]>> {
  const results = Object.fromEntries(sides.map((side) => [side.name, [] as T[]])) as Record<Side['name'], T[]>
  for (const side of sides) await streamChat(side.url, {ignore_eos: true, max_tokens: 8, model: side.model})
  for (let round = 0; round < repeats; round++) for (const side of round % 2 ? [...sides].reverse() : sides) results[side.name].push(await once(side))
  return results
}

/** Both servers on the same model with `slots` parallel sequences of `context` tokens each. */
async function startPair({service, startLlamaServer}: Servers, name: string, modelPath: string, slots: number, context: number) {
  const launched = await callApi(service, 'POST', '/v1/models', {model_engine: 'llama.cpp', model_name: name, n_ctx: context, n_parallel: slots, ...(options.threads ? {n_threads: threads} : {}), ...(options.gpu ? {n_gpu_layers: -1} : {})})
  if (launched.status !== 200) throw new Error(JSON.stringify(launched.body))
  let server: Awaited<ReturnType<Servers['startLlamaServer']>>
  try {
    server = await startLlamaServer(modelPath, {contextPerSlot: context, slots})
  } catch (error) {
    await callApi(service, 'DELETE', `/v1/models/${name}`)
    throw error
  }

  const info = (await callApi(service, 'GET', `/v1/models/${name}`)).body
  return {
    info,
    sides: [
      {model: name, name: 'ours', url: `${service.url}/v1`},
      {model: name, name: 'llama-server', url: server.url},
    ] satisfies Side[],
    async stop() {
      await server.stop()
      await callApi(service, 'DELETE', `/v1/models/${name}`)
    },
  }
}

/** One round of `count` streams sent at once, in order: the samples (failed ones counted) and when each was sent. */
async function streamRound(side: Side, count: number, maxTokens: number) {
  const started = performance.now()
  const sent: number[] = []
  const settled = await Promise.allSettled(
    Array.from({length: count}, () => {
      sent.push(performance.now())
      return streamChat(side.url, {ignore_eos: true, max_tokens: maxTokens, model: side.model})
    }),
  )
  const wall = performance.now() - started
  const samples = settled.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []))
  const firstTokens = settled.map((result, index) => (result.status === 'fulfilled' ? sent[index] + result.value.ttft : Number.POSITIVE_INFINITY))
  return {errors: settled.length - samples.length, firstTokens, round: {samples, wall} satisfies Round}
}

function describeLoad(runs: Array<Awaited<ReturnType<typeof streamRound>>>, slots: number) {
  const rounds = runs.map((run) => run.round)
  const ttfts = rounds.flatMap((round) => round.samples.map((sample) => sample.ttft))
  const orders = runs.map((run) => queueOrder(run.firstTokens, slots))
  return {
    ...describeRounds(rounds),
    errors: runs.reduce((sum, run) => sum + run.errors, 0),
    out_of_wave: summary(orders.map((order) => order.outOfWave)),
    rho: summary(orders.map((order) => order.rho)),
    ttft_p99_ms: percentile(ttfts, 99),
  }
}

/** A user message of about `tokens` tokens, different from its first word on for each `run`, so no cache holds it. */
function longMessage(run: number, words: number) {
  const text = PROMPT.split(' ')
  return `Story ${run}: ${Array.from({length: words}, (_, index) => text[(index * 7 + run) % text.length]).join(' ')}`
}

/** The first turn of a long conversation, then its second turn; TTFT of each and the prompt sizes both reported. */
async function conversation(side: Side, run: number, words: number) {
  const first = [{content: longMessage(run, words), role: 'user'}]
  const turn1: ChatSample = await streamChat(side.url, {ignore_eos: true, max_tokens: 16, messages: first, model: side.model})
  const second = [...first, {content: turn1.text, role: 'assistant'}, {content: 'Go on, and tell me more about the map.', role: 'user'}]
  const turn2: ChatSample = await streamChat(side.url, {ignore_eos: true, max_tokens: 16, messages: second, model: side.model})
  return {prompt1: turn1.promptTokens, prompt2: turn2.promptTokens, ttft1: turn1.ttft, ttft2: turn2.ttft}
}

let conversations = 0
/** (c): a long prompt's TTFT on each side, then its second turn's. */
async function longPrompt(sides: Side[], name: string, print: (line: string) => void) {
  // The generated tokenizers' tokens per word vary with their vocabulary: measured on a 200-word message first.
  const probe = await streamChat(sides[0].url, {max_tokens: 1, messages: [{content: longMessage(-1, 200), role: 'user'}], model: name})
  const words = Math.round((Number(options['prompt-tokens']) * 200) / probe.promptTokens)
  const turns = await alternate(sides, (side) => conversation(side, conversations++, words))
  const describe = (list: typeof turns.ours) => ({
    prompt_tokens: [median(list.map((turn) => turn.prompt1)), median(list.map((turn) => turn.prompt2))],
    second_turn_ms: summary(list.map((turn) => turn.ttft2)),
    ttft_ms: summary(list.map((turn) => turn.ttft1)),
  })
  const [ours, theirs] = [describe(turns.ours), describe(turns['llama-server'])]
  print(`long prompt (${ours.prompt_tokens[0]} / ${theirs.prompt_tokens[0]} tokens) TTFT ms | ours ${show(ours.ttft_ms)} | llama-server ${show(theirs.ttft_ms)} | ×${ratio(ours.ttft_ms.median, theirs.ttft_ms.median)}`)
  print(`its second turn (${ours.prompt_tokens[1]} / ${theirs.prompt_tokens[1]} tokens) TTFT ms | ours ${show(ours.second_turn_ms)} | llama-server ${show(theirs.second_turn_ms)} | ×${ratio(ours.second_turn_ms.median, theirs.second_turn_ms.median)}`)
  return {'llama-server': theirs, ours}
}

async function benchSize(servers: Servers, size: string, modelPath: string, print: (line: string) => void) {
  const {service} = servers
  const name = `bench-${size}`
  const results: Record<string, unknown> = {}
  const family = {model_name: name, model_specs: [{model_format: 'ggufv2', model_size_in_billions: 1, model_uri: `file://${modelPath}`, quantization: 'f32'}]}
  await callApi(service, 'POST', '/v1/model_registrations/LLM', {model: family, persist: false})

  // (a) and (c): four slots of 4096 tokens.
  let pair = await startPair(servers, name, modelPath, 4, 4096)
  results.ours_threads = pair.info.threads ?? pair.info.info?.threads
  try {
    print(`\n${size}, 4 slots | ours tok/s | llama-server tok/s | ours/llama-server | ours TTFT ms | llama-server TTFT ms`)
    for (const streams of [1, 4].filter((count) => streamCounts.has(count))) {
      const runs = await alternate(pair.sides, (side) => streamRound(side, streams, MAX_TOKENS))
      const [ours, theirs] = [describeLoad(runs.ours, 4), describeLoad(runs['llama-server'], 4)]
      results[`c${streams}`] = {'llama-server': theirs, ours}
      print(`${streams} stream(s), ${MAX_TOKENS} tokens | ${show(ours.tokens_per_s)} | ${show(theirs.tokens_per_s)} | ${ratio(ours.tokens_per_s.median, theirs.tokens_per_s.median)} | ${show(ours.ttft_ms)} | ${show(theirs.ttft_ms)}`)
    }

    if (!options['skip-long-prompt']) results.long_prompt = await longPrompt(pair.sides, name, print)
  } finally {
    await pair.stop()
  }

  // (b): as many slots as streams, then 4 requests per slot on 16.
  const tokens = loadTokens(size)
  print(`${size} under load, ${tokens} tokens | ours tok/s | llama-server tok/s | ours/llama-server | ours p99 TTFT ms | llama-server p99 TTFT ms | errors | FIFO rho ours / llama-server | out of wave`)
  for (const [slots, streams] of [
    [16, 16],
    [64, 64],
    [16, 64],
  ].filter(([, streams]) => streamCounts.has(streams))) {
    pair = await startPair(servers, name, modelPath, slots, 512)
    try {
      const runs = await alternate(pair.sides, (side) => streamRound(side, streams, tokens))
      const [ours, theirs] = [describeLoad(runs.ours, slots), describeLoad(runs['llama-server'], slots)]
      results[`c${streams}_on_${slots}`] = {'llama-server': theirs, ours}
      print(
        `${streams} streams on ${slots} slots | ${show(ours.tokens_per_s)} | ${show(theirs.tokens_per_s)} | ${ratio(ours.tokens_per_s.median, theirs.tokens_per_s.median)} | ${ours.ttft_p99_ms.toFixed(0)} | ${theirs.ttft_p99_ms.toFixed(0)} | ${ours.errors} / ${theirs.errors} | ${show(ours.rho, 2)} / ${show(theirs.rho, 2)} | ${show(ours.out_of_wave, 0)} / ${show(theirs.out_of_wave, 0)}`,
      )
      if (streams > slots) print(`  waits (TTFT) ms: ours ${show(ours.ttft_ms, 0)}, llama-server ${show(theirs.ttft_ms, 0)}`)
    } finally {
      await pair.stop()
    }
  }

  return results
}

/** The GPU and driver as nvidia-smi reports them, or why there is none. */
async function gpuDescription(): Promise<string> {
  const query = await execa('nvidia-smi', ['--query-gpu=name,driver_version,memory.total', '--format=csv,noheader'], {reject: false})
  return query.exitCode === 0 ? query.stdout.trim() : 'none (no nvidia-smi, or it found no GPU)'
}

/** Which llama.cpp binaries our engine loads here: node-llama-cpp's prebuilt ones or a local build, and its GPU. */
async function ourBinaries(): Promise<string> {
  const {getLlama} = await import('node-llama-cpp')
  const llama = await getLlama({...FIND_PORTABLE_BUILD, build: 'never', gpu: options.gpu ? 'cuda' : false, progressLogs: false})
  const variant = await loadedCpuVariant()
  const described = `${llama.buildType} node-llama-cpp binaries (llama.cpp ${llama.llamaCppRelease.release}), GPU: ${llama.gpu || 'none'}${/OPENMP = 1/.test(llama.systemInfo) ? ', OpenMP' : ''}${variant ? `, CPU variant ${variant}` : ''}`
  await llama.dispose()
  return described
}

/** The service and llama-server here: llama-server built by bench/llama-server-binary.ts, our engine's binaries as a launch finds them. */
async function localServers(print: (line: string) => void) {
  const binary = await ensureLlamaServer({gpu: options.gpu, log: print})
  const service: RunningService = await startService()
  const servers: Servers = {service, startLlamaServer: (modelPath, shape) => startLlamaServer(binary, modelPath, {...shape, gpu: options.gpu, threads})}
  return {llamaServer: `${binary} (llama.cpp ${await bundledRelease()}, -t ${threads}${options.gpu ? ', CUDA, -ngl 999' : ''})`, ours: await ourBinaries(), servers, stop: () => service.stop()}
}

/** Both sides in containers of `image`, the models in `work` mounted into them. */
async function imageServers(image: string, work: string) {
  if (options.gpu) throw new Error('--image runs on the CPU: leave out --gpu')
  const service = await startImageService(image, work)
  const servers: Servers = {service, startLlamaServer: (modelPath, shape) => startImageLlamaServer(image, work, modelPath, {...shape, threads})}
  return {llamaServer: `llama-server in ${image} (-t ${threads})`, ours: `service-local in ${image}: ${await service.binaries()}`, servers, stop: () => service.stop()}
}

export async function benchLlamaServer(print: (line: string) => void = console.log): Promise<Record<string, unknown>> {
  const work = await temporaryDirectory('service-bench-')
  const {llamaServer, ours, servers, stop} = options.image ? await imageServers(options.image, work) : await localServers(print)
  // Both local sides inherit it (the containers of --image do not): PASSIVE makes OpenMP's threads sleep at each barrier.
  const ompWaitPolicy = (!options.image && process.env.OMP_WAIT_POLICY) || "OpenMP's default"
  const results: Record<string, unknown> = {gpu: await gpuDescription(), llama_server: llamaServer, load_before: loadavg(), omp_wait_policy: ompWaitPolicy, ours, repeats}
  print(
    `\nAgainst llama-server: ${results.llama_server}; ours: ${results.ours}; GPU: ${results.gpu}; OMP_WAIT_POLICY: ${ompWaitPolicy}; load average ${loadavg().map((load) => load.toFixed(2)).join(' ')}`,
  )
  try {
    for (const size of sizes) {
      const modelPath = join(work, `${size}.gguf`)
      await writeRandomLlamaGguf(modelPath, SIZES[size])
      results[size] = await benchSize(servers, size, modelPath, print)
      await rm(modelPath, {force: true})
    }
  } finally {
    await stop()
    await rm(work, {force: true, recursive: true})
  }

  results.load_after = loadavg()
  print(`load average after: ${loadavg().map((load) => load.toFixed(2)).join(' ')}`)
  return results
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const lines: string[] = []
  const results = await benchLlamaServer((line) => {
    lines.push(line)
    console.log(line)
  })
  const directory = join(ROOT, 'bench/results')
  await mkdir(directory, {recursive: true})
  const file = join(directory, `llama-server-${new Date().toISOString().replaceAll(':', '-')}.json`)
  await writeFile(file, JSON.stringify({...results, table: lines}, null, 2))
  console.log(`\nwrote ${file}`)
}
