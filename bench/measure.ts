/**
 * The workload and the client-side metrics shared by the benchmark's runs, as vLLM's `bench serve` defines them:
 * TTFT (request sent → first content), TPOT ((end − first) / (tokens − 1)), ITL (gaps between content chunks),
 * end-to-end latency and output tokens/s over a round's wall time.
 */
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
