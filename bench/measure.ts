/**
 * The workload and the client-side metrics shared by the benchmark's runs, as vLLM's `bench serve` defines them:
 * TTFT (request sent → first content), TPOT ((end − first) / (tokens − 1)), ITL (gaps between content chunks),
 * end-to-end latency and output tokens/s over a round's wall time.
 */
import {readdir, readFile} from 'node:fs/promises'

export const PROMPT = 'Write a long story about a lighthouse keeper who finds a map, and tell it slowly, with every detail of the sea and sky.'
export const MAX_TOKENS = 128

export interface Sample {
  ttft: number
  tpot: number
  itl: number[]
  latency: number
  tokens: number
}

export interface Round {
  samples: Sample[]
  wall: number
}

export const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
}

export const summary = (values: number[]) => ({max: Math.max(...values), median: median(values), min: Math.min(...values)})
export const show = (s: {median: number; min: number; max: number}, digits = 1) => `${s.median.toFixed(digits)} (${s.min.toFixed(digits)}–${s.max.toFixed(digits)})`

/** A streamed chat's sample, with its prompt size and text as the server reported and wrote them. */
export interface ChatSample extends Sample {
  promptTokens: number
  text: string
}

/**
 * One streamed chat completion against an OpenAI-compatible server, timed on the client: PROMPT and MAX_TOKENS
 * unless `body` says otherwise. Other servers get `ignore_eos` so that real models produce all MAX_TOKENS; our
 * generated models never end a turn.
 */
export async function streamChat(baseUrl: string, body: Record<string, unknown> & {model: string}): Promise<ChatSample> {
  const start = performance.now()
  const response = await fetch(`${baseUrl}/chat/completions`, {
    body: JSON.stringify({
      max_tokens: MAX_TOKENS,
      messages: [{content: PROMPT, role: 'user'}],
      stream: true,
      stream_options: {include_usage: true},
      temperature: 0,
      ...body,
    }),
    headers: {'content-type': 'application/json'},
    method: 'POST',
  })
  if (!response.ok) throw new Error(`${response.status}: ${await response.text()}`)
  const stamps: number[] = []
  let tokens = 0
  let promptTokens = 0
  let text = ''
  let buffer = ''
  const decoder = new TextDecoder()
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(chunk, {stream: true})
    let boundary
    while ((boundary = buffer.indexOf('\n\n')) >= 0) {
      const line = buffer.slice(0, boundary).replace(/^data: /, '')
      buffer = buffer.slice(boundary + 2)
      if (line === '[DONE]') continue
      const event = JSON.parse(line)
      const content = event.choices?.[0]?.delta?.content
      if (content) {
        stamps.push(performance.now())
        text += content
      }

      if (event.usage) [tokens, promptTokens] = [event.usage.completion_tokens, event.usage.prompt_tokens]
    }
  }

  return {...sampleFrom(start, stamps, performance.now(), tokens || stamps.length), promptTokens, text}
}

export function sampleFrom(start: number, stamps: number[], end: number, tokens: number): Sample {
  const ttft = (stamps[0] ?? end) - start
  return {
    itl: stamps.slice(1).map((t, i) => t - stamps[i]),
    latency: end - start,
    tokens,
    tpot: tokens > 1 ? (end - (stamps[0] ?? end)) / (tokens - 1) : 0,
    ttft,
  }
}

/** A warm-up run, then `repeats` rounds of `concurrency` runs at once. */
export async function rounds(run: () => Promise<Sample>, concurrency: number, repeats: number): Promise<Round[]> {
  await run()
  const out: Round[] = []
  for (let i = 0; i < repeats; i++) {
    const start = performance.now()
    const samples = await Promise.all(Array.from({length: concurrency}, () => run()))
    out.push({samples, wall: performance.now() - start})
  }

  return out
}

export function describeRounds(list: Round[]) {
  const all = list.flatMap((r) => r.samples)
  return {
    e2e_ms: summary(all.map((s) => s.latency)),
    itl_ms: summary(all.flatMap((s) => s.itl).length > 0 ? all.flatMap((s) => s.itl) : [0]),
    tokens_per_s: summary(list.map((r) => r.samples.reduce((n, s) => n + s.tokens, 0) / (r.wall / 1000))),
    tpot_ms: summary(all.map((s) => s.tpot)),
    ttft_ms: summary(all.map((s) => s.ttft)),
  }
}

export type Measured = ReturnType<typeof describeRounds>

/**
 * How far the first tokens' order is from the order requests were sent: Spearman's rho (1 is FIFO), and how many
 * requests got their first token in another wave of `slots` than FIFO would give them.
 */
export function queueOrder(firstTokens: number[], slots: number) {
  const ranks = firstTokens.map((_, index) => index).sort((a, b) => firstTokens[a] - firstTokens[b])
  const rankOf = new Map(ranks.map((request, rank) => [request, rank]))
  const n = firstTokens.length
  const squares = firstTokens.reduce((sum, _, index) => sum + (index - rankOf.get(index)!) ** 2, 0)
  const outOfWave = firstTokens.filter((_, index) => Math.floor(index / slots) !== Math.floor(rankOf.get(index)! / slots)).length
  return {outOfWave, rho: n < 2 ? 1 : 1 - (6 * squares) / (n * (n * n - 1))}
}

/** A column of a printed table: its header, and at least how wide its cells are (the header's width otherwise). */
export type Column = string | {header: string; width: number}

/**
 * Prints a table's header and answers the function that prints each row, its cells padded to their column's width
 * (the first, the number of streams, right-aligned) and joined by ` | `, so header and rows line up.
 */
export function printTable(print: (line: string) => void, columns: Column[]): (cells: string[]) => void {
  const headers = columns.map((column) => (typeof column === 'string' ? column : column.header))
  const widths = columns.map((column, i) => Math.max(headers[i].length, typeof column === 'string' ? 0 : column.width))
  const line = (cells: string[]) => cells.map((cell, i) => (i === 0 ? cell.padStart(widths[i]) : cell.padEnd(widths[i] ?? 0))).join(' | ').trimEnd()
  print(line(headers))
  return (cells) => print(line(cells))
}

/** The cells every comparison row starts with: streams, both sides' tokens/s and their ratio, both sides' TTFT. */
export function comparedCells(concurrency: number, ours: Measured, other: Measured, ratioDigits = 2): string[] {
  return [String(concurrency), show(ours.tokens_per_s), show(other.tokens_per_s), (ours.tokens_per_s.median / other.tokens_per_s.median).toFixed(ratioDigits), show(ours.ttft_ms), show(other.ttft_ms)]
}

/**
 * What a process has used so far, from /proc: CPU time (user + system, ms) and the times its main thread (the event
 * loop, in Node) went to sleep waiting and was woken (voluntary context switches): a proxy's wake-ups per token.
 */
export async function processUsage(pid: number): Promise<{cpuMs: number; wakeUps: number}> {
  const [stat, status] = await Promise.all([readFile(`/proc/${pid}/stat`, 'utf8'), readFile(`/proc/${pid}/status`, 'utf8')])
  const fields = stat.split(') ')[1].split(' ')
  return {cpuMs: ((Number(fields[11]) + Number(fields[12])) * 1000) / 100, wakeUps: Number(/^voluntary_ctxt_switches:\s+(\d+)/m.exec(status)?.[1] ?? 0)}
}

/** CPU nanoseconds of each thread of a process, by thread id, from /proc/<pid>/task/<tid>/schedstat. */
export async function threadTimes(pid: number): Promise<Map<number, number>> {
  const times = new Map<number, number>()
  for (const tid of await readdir(`/proc/${pid}/task`).catch(() => [])) {
    const stat = await readFile(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').catch(() => '')
    if (stat) times.set(Number(tid), Number(stat.split(' ')[0]))
  }

  return times
}

/**
 * A process's CPU milliseconds so far, every thread's, to the nanosecond: /proc/<pid>/stat counts in 10 ms ticks,
 * too coarse for the tenths of a millisecond a short reply costs a route.
 */
export async function processCpuMs(pid: number): Promise<number> {
  let sum = 0
  for (const time of (await threadTimes(pid)).values()) sum += time
  return sum / 1e6
}
