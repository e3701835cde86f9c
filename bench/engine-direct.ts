/**
 * Child process of `npm run bench`: our llama.cpp engine used in-process, the way a model process uses it but
 * without IPC, HTTP or SSE. Reads {modelPath, parameters, concurrency, repeats} as JSON on stdin and prints the
 * rounds' samples as JSON, so the benchmark can tell what the serving path costs on top of the engine.
 */
import type {GenerationEvent} from '../src/kernel/generation.js'

import {text} from 'node:stream/consumers'

import {loadEngineInProcess} from './in-process-engine.js'
import {MAX_TOKENS, PROMPT, rounds, type Sample, sampleFrom} from './measure.js'

const {concurrency, modelPath, parameters, repeats} = JSON.parse(await text(process.stdin))
const loaded = await loadEngineInProcess(modelPath, parameters)

async function chatOnce(): Promise<Sample> {
  const start = performance.now()
  const stamps: number[] = []
  let tokens = 0
  const events = loaded.operations.chat!({maxTokens: MAX_TOKENS, messages: [{content: PROMPT, role: 'user'}], temperature: 0}, new AbortController().signal)
  for await (const event of events as AsyncIterable<GenerationEvent>) {
    if (event.type === 'text') stamps.push(performance.now())
    if (event.type === 'done') tokens = event.completionTokens
  }

  return sampleFrom(start, stamps, performance.now(), tokens)
}

process.stdout.write(JSON.stringify(await rounds(chatOnce, concurrency, repeats)))
await loaded.dispose()
