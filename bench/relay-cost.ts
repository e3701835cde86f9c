/**
 * What the service itself spends relaying an external program's stream, paced (the default stream interval) and
 * unpaced (SERVICE_STREAM_INTERVAL_MS=0), in one run: two real service-locals with the tests' external echo engine
 * (test/fixtures/plugins/engine-external-echo, a standard-library Python server streaming one word a chunk), each
 * streamed 128 words with the official openai client, requests alternating between them. Prints the service's CPU
 * time and wake-ups (from /proc) per relayed word and the text chunks a reply arrives in. `node --import tsx bench/relay-cost.ts
 * --rounds 40 --delay-ms 1` (the program's pause before each word; 0 writes them as fast as it can).
 */
import {rm} from 'node:fs/promises'
import {loadavg} from 'node:os'
import {parseArgs} from 'node:util'
import OpenAI from 'openai'

import {echoService} from '../test/helpers/external-echo.js'
import {callApi} from '../test/helpers/service.js'
import {processUsage} from './measure.js'

const WORDS = 128

const {values} = parseArgs({options: {'delay-ms': {default: '1', type: 'string'}, rounds: {default: '40', type: 'string'}}})
const rounds = Number(values.rounds)
const prompt = Array.from({length: WORDS}, (_, index) => `w${index}`).join(' ')
const sides = []
for (const [label, interval] of [['unpaced (SERVICE_STREAM_INTERVAL_MS=0)', '0'], ['paced (default)', '']] as const) {
  const service = await echoService([], interval ? {SERVICE_STREAM_INTERVAL_MS: interval} : {})
  const launched = await callApi(service, 'POST', '/v1/models', {delay_ms: Number(values['delay-ms']), model_engine: 'external-echo', model_name: 'external-echo-test', model_uid: 'echo'})
  if (launched.status !== 200) throw new Error(JSON.stringify(launched.body))
  sides.push({chunks: 0, cpu: 0, wakeUps: 0, label, openai: new OpenAI({apiKey: 'unused', baseURL: `${service.url}/v1`, maxRetries: 0}), service})
}

console.log(`load average ${loadavg().map((n) => n.toFixed(2)).join(' ')}; ${rounds} replies of ${WORDS} words on each side, a word every ${values['delay-ms']} ms`)
try {
  for (let i = 0; i < rounds; i++) {
    // Which side goes first alternates, so a burst of other work on the machine does not favour one.
    for (const side of i % 2 === 0 ? sides : [...sides].reverse()) {
      const before = await processUsage(side.service.process.pid!)
      const stream = await side.openai.chat.completions.create({messages: [{content: prompt, role: 'user'}], model: 'echo', stream: true})
      for await (const chunk of stream) if (chunk.choices[0]?.delta.content) side.chunks++
      const after = await processUsage(side.service.process.pid!)
      side.cpu += after.cpuMs - before.cpuMs
      side.wakeUps += after.wakeUps - before.wakeUps
    }
  }

  for (const side of sides) console.log(`${side.label}: service CPU ${(side.cpu / (rounds * WORDS)).toFixed(3)} ms and ${(side.wakeUps / (rounds * WORDS)).toFixed(2)} wake-ups a word, ${(side.chunks / rounds).toFixed(1)} text chunks a reply`)
} finally {
  await Promise.all(sides.map(async (side) => {
    await side.service.stop()
    await rm(side.service.home, {force: true, recursive: true})
  }))
}

console.log(`load average after: ${loadavg().map((n) => n.toFixed(2)).join(' ')}`)
