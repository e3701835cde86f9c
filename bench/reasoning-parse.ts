/**
 * What splitting a stream costs per token: the reasoning parser (`<think>` tags and gpt-oss's harmony channels) and
 * the tool-call parser (hermes), each fed a long generated stream cut into token-sized pieces (1–7 characters), as a
 * model process feeds them one engine event at a time. Prints the nanoseconds each piece costs (median of the rounds,
 * with the range), next to which the model process's own main-thread CPU time per token (bench/token-cost.ts:
 * 106,000–151,000 ns on the small model) shows whether parsing is measurable.
 *
 *   node --import tsx bench/reasoning-parse.ts [--rounds 7] [--words 50000]
 */
import {loadavg} from 'node:os'
import {parseArgs} from 'node:util'

import {ReasoningParser, THINK_TAGS} from '../src/kernel/reasoning.js'
import {ToolCallParser} from '../src/kernel/tool-calls.js'
import {show, summary} from './measure.js'

const {values: options} = parseArgs({options: {rounds: {default: '7', type: 'string'}, words: {default: '50000', type: 'string'}}})
const words = Number(options.words)

/** A deterministic pseudo-random sequence (a linear congruential generator), so every run parses the same stream. */
function numbers(seed: number) {
  let state = seed
  return (below: number) => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31
    return state % below
  }
}

const VOCABULARY = ['the', 'sea', 'lighthouse', 'keeper', 'map', 'found', 'slowly', 'and', 'of', 'sky', 'with', 'every', 'detail', '<', '/', 'think', '|', 'tool', 'call', '>']

function prose(count: number, random: (below: number) => number): string {
  return Array.from({length: count}, () => VOCABULARY[random(VOCABULARY.length)]).join(' ')
}

/** `text` cut where a tokenizer might cut it: pieces of 1 to 7 characters. */
function pieces(text: string, random: (below: number) => number): string[] {
  const out: string[] = []
  for (let at = 0; at < text.length; ) {
    const length = 1 + random(7)
    out.push(text.slice(at, at + length))
    at += length
  }

  return out
}

const random = numbers(42)
const half = Math.floor(words / 2)
const streams = {
  'harmony channels': {
    feed: () => new ReasoningParser({kind: 'harmony'}),
    text: `<|channel|>analysis<|message|>${prose(half, random)}<|end|><|start|>assistant<|channel|>final<|message|>${prose(half, random)}<|return|>`,
  },
  'hermes tool calls': {
    feed: () => new ToolCallParser('hermes'),
    text: `${prose(half, random)}\n<tool_call>\n{"name": "lookup", "arguments": {"query": "${prose(200, random)}"}}\n</tool_call>\n${prose(half, random)}`,
  },
  '<think> tags': {
    feed: () => new ReasoningParser(THINK_TAGS),
    text: `<think>\n${prose(half, random)}\n</think>\n\n${prose(half, random)}`,
  },
}

console.log(`${words} words a stream, ${options.rounds} rounds; load average ${loadavg().map((load) => load.toFixed(2)).join(' ')}`)
console.log('stream | pieces | ns a piece, median (range)')
for (const [name, {feed, text}] of Object.entries(streams)) {
  const cut = pieces(text, numbers(7))
  const perPiece: number[] = []
  // The first round warms the parser's code up and is not counted.
  for (let round = 0; round <= Number(options.rounds); round++) {
    const parser = feed()
    let settled = 0
    const started = process.hrtime.bigint()
    for (const piece of cut) settled += parser.push(piece).length
    settled += parser.finish().length
    const elapsed = Number(process.hrtime.bigint() - started)
    if (settled === 0) throw new Error(`${name}: the parser settled nothing`)
    if (round > 0) perPiece.push(elapsed / cut.length)
  }

  console.log(`${name} | ${cut.length} | ${show(summary(perPiece), 0)}`)
}
