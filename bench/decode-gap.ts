/**
 * Where one stream's token goes inside a model process, with no IPC, HTTP or SSE: our llama.cpp engine used
 * in-process (as bench/engine-direct.ts uses it), its context's native calls wrapped to time each token's decode
 * (`decodeBatch`, from the call until its promise settles), its sampling (`sampleToken`, likewise) and the
 * JavaScript between them, the main thread's CPU a token (its schedstat), and a one-token reply's first text. Then
 * llama-server's own time a token (`timings.predicted_per_token_ms`: its decode and sampling, not its HTTP) on the
 * same GGUF, non-streamed, and the whole of a one-token request to it: the two generation loops side by side without
 * the serving paths that bench/token-cost.ts and bench/llama-server.ts measure them with.
 *
 *   node --import tsx bench/decode-gap.ts [--size medium] [--rounds 6] [--tokens 128]
 *
 * Rounds alternate between the sides, llama-server first in every other one. Each of ours runs in a child of its
 * own with one libuv pool thread, as the engine's model processes run (plugins/engine-llama-cpp/src/register.ts);
 * both sides compute on every core.
 */
import {execa} from 'execa'
import {rm} from 'node:fs/promises'
import {cpus, loadavg} from 'node:os'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'
import {parseArgs} from 'node:util'

import type {GenerationEvent} from '../src/kernel/generation.js'

import {RANDOM_LLAMA_SIZES, type RandomLlamaOptions, writeRandomLlamaGguf} from '../plugins/engine-llama-cpp/src/gguf/random-llama.js'
import {temporaryDirectory} from '../test/helpers/service.js'
import {ensureLlamaServer, startLlamaServer} from './llama-server-binary.js'
import {loadEngineInProcess} from './in-process-engine.js'
import {median, PROMPT, threadTimes} from './measure.js'

const {values: options} = parseArgs({
  options: {
    child: {type: 'string'},
    rounds: {default: '6', type: 'string'},
    size: {default: 'medium', type: 'string'},
    tokens: {default: '128', type: 'string'},
  },
})
const rounds = Number(options.rounds)
const tokens = Number(options.tokens)
const ms = (value: number) => value.toFixed(3)

interface EngineRound {
  perToken: number
  decode: number
  sample: number
  /** From a decode's end to its sampling's start, plus from a sampling's end to the next decode's start (medians). */
  between: number
  mainCpu: number
  /** A one-token reply to the same prompt again: from the call to its text. */
  firstText: number
}

/** The child: the engine in-process, a reply to warm up, then one measured reply's medians a token. */
async function engineInProcess(modelPath: string): Promise<EngineRound> {
  const {LlamaModel} = (await import('node-llama-cpp')) as unknown as {LlamaModel: {prototype: {createContext(...args: unknown[]): Promise<{_ctx: object}>}}}
  const stamps: Array<[string, number]> = []
  const createContext = LlamaModel.prototype.createContext
  LlamaModel.prototype.createContext = async function (...args) {
    const context = await createContext.apply(this, args)
    const native = context._ctx as Record<string | symbol, unknown>
    context._ctx = new Proxy(native, {
      get(target, key) {
        const value = target[key]
        if (typeof value !== 'function') return value
        if (key !== 'decodeBatch' && key !== 'sampleToken') return value.bind(target)
        return (...callArgs: unknown[]) => {
          stamps.push([`${String(key)}>`, performance.now()])
          return (value.apply(target, callArgs) as Promise<unknown>).then((result) => {
            stamps.push([`${String(key)}<`, performance.now()])
            return result
          })
        }
      },
    })
    return context
  }

  const loaded = await loadEngineInProcess(modelPath, {n_parallel: 4})
  const mainCpu = async () => ((await threadTimes(process.pid)).get(process.pid) ?? Number.NaN) / 1e6
  const once = async (maxTokens: number) => {
    const started = performance.now()
    let [generated, firstText] = [0, Number.NaN]
    const events = loaded.operations.chat!({ignoreEos: true, maxTokens, messages: [{content: PROMPT, role: 'user'}], temperature: 0} as never, new AbortController().signal)
    for await (const event of events as AsyncIterable<GenerationEvent>) {
      if (event.type === 'text' && Number.isNaN(firstText)) firstText = performance.now() - started
      if (event.type === 'done') generated = event.completionTokens
    }

    return {firstText, generated}
  }

  await once(tokens)
  stamps.length = 0
  const [cpuBefore, started] = [await mainCpu(), performance.now()]
  const {generated} = await once(tokens)
  const [wall, cpu] = [performance.now() - started, (await mainCpu()) - cpuBefore]
  const {firstText} = await once(1)
  await loaded.dispose()
  const spans: Record<string, number[]> = {}
  for (let index = 1; index < stamps.length; index++) (spans[`${stamps[index - 1][0]}${stamps[index][0]}`] ??= []).push(stamps[index][1] - stamps[index - 1][1])
  const of = (from: string, to: string) => median(spans[`${from}${to}`] ?? [Number.NaN])
  return {
    between: of('decodeBatch<', 'sampleToken>') + of('sampleToken<', 'decodeBatch>'),
    decode: of('decodeBatch>', 'decodeBatch<'),
    firstText,
    mainCpu: cpu / generated,
    perToken: wall / generated,
    sample: of('sampleToken>', 'sampleToken<'),
  }
}

/**
 * llama-server's own time a token for one non-streamed reply, and then the whole of a one-token request to the same
 * prompt, its HTTP included (more than its time to first token, so a fair bound for ours).
 */
async function llamaServerRound(url: string): Promise<{perToken: number; firstText: number}> {
  const reply = async (maxTokens: number) => {
    const started = performance.now()
    const response = await fetch(`${url}/chat/completions`, {
      body: JSON.stringify({ignore_eos: true, max_tokens: maxTokens, messages: [{content: PROMPT, role: 'user'}], temperature: 0}),
      headers: {'content-type': 'application/json'},
      method: 'POST',
    })
    const {timings} = (await response.json()) as {timings: {predicted_per_token_ms: number}}
    return {timings, wall: performance.now() - started}
  }

  const {timings} = await reply(tokens)
  return {firstText: (await reply(1)).wall, perToken: timings.predicted_per_token_ms}
}

/** One round of the engine in a child of its own (a load, a reply to warm up, the measured reply). */
async function engineRound(modelPath: string): Promise<EngineRound> {
  const child = await execa(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url), '--child', modelPath, '--tokens', String(tokens)], {
    env: {UV_THREADPOOL_SIZE: '1'},
    stderr: 'inherit',
  })
  return JSON.parse(child.stdout) as EngineRound
}

if (options.child) {
  process.stdout.write(JSON.stringify(await engineInProcess(options.child)))
} else {
  const work = await temporaryDirectory('service-bench-')
  try {
    const modelPath = join(work, `${options.size}.gguf`)
    const shape = (RANDOM_LLAMA_SIZES as Record<string, RandomLlamaOptions | undefined>)[options.size]
    if (!shape) throw new Error(`--size: one of ${Object.keys(RANDOM_LLAMA_SIZES).join(', ')}`)
    await writeRandomLlamaGguf(modelPath, shape)
    console.log(`${options.size}, one stream, ${tokens} tokens, ${rounds} alternating rounds, ${cpus().length} threads; load average ${loadavg().map((load) => load.toFixed(2)).join(' ')}`)
    const server = await startLlamaServer(await ensureLlamaServer(), modelPath, {contextPerSlot: 4096, slots: 4, threads: cpus().length})
    const engine: EngineRound[] = []
    const serverRounds: Array<{perToken: number; firstText: number}> = []
    try {
      await llamaServerRound(server.url)
      for (let round = 0; round < rounds; round++) {
        if (round % 2 === 1) serverRounds.push(await llamaServerRound(server.url))
        engine.push(await engineRound(modelPath))
        if (round % 2 === 0) serverRounds.push(await llamaServerRound(server.url))
      }
    } finally {
      await server.stop()
    }

    console.log('ms | a token | decode | sampling | JavaScript between | main thread CPU a token | first token')
    for (const round of engine) console.log(`our engine, in-process | ${ms(round.perToken)} | ${ms(round.decode)} | ${ms(round.sample)} | ${ms(round.between)} | ${ms(round.mainCpu)} | ${ms(round.firstText)}`)
    for (const round of serverRounds) console.log(`llama-server (its own timings; a one-token request) | ${ms(round.perToken)} | | | | | ${ms(round.firstText)}`)
    const medians = (list: Array<{perToken: number; firstText: number}>) => `${ms(median(list.map((round) => round.perToken)))} a token, first token ${ms(median(list.map((round) => round.firstText)))}`
    console.log(`medians: ours ${medians(engine)}; llama-server ${medians(serverRounds)}; load average after: ${loadavg().map((load) => load.toFixed(2)).join(' ')}`)
  } finally {
    await rm(work, {force: true, recursive: true})
  }
}
