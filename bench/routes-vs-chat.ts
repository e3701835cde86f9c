/**
 * The other APIs' chat routes — OpenAI's `/v1/responses` and Ollama's `/api/chat` — against `/v1/chat/completions`
 * on the same model in the same run: one service-local serving a generated tiny llama model (which never ends its turn
 * by itself, so every reply is exactly `--tokens` tokens), streamed with each API's official client (openai, ollama),
 * the routes taking turns. Prints, per route, the median wall time of a reply, the service process's CPU time per
 * token (the model runs in its own process, so this is what the route and the HTTP edge spend) and this process's
 * (the client's parsing), and each route's ratios to chat. `npm run bench:routes` (`node --import tsx bench/routes-vs-chat.ts --rounds 30`)
 */
import {loadavg} from 'node:os'
import {parseArgs} from 'node:util'
import {Ollama} from 'ollama'
import OpenAI from 'openai'

import {writeTinyChatModel} from '../test/helpers/models.js'
import {callApi, startService, temporaryDirectory} from '../test/helpers/service.js'
import {median, processCpuMs} from './measure.js'

const {values} = parseArgs({options: {rounds: {default: '30', type: 'string'}, tokens: {default: '128', type: 'string'}}})
const rounds = Number(values.rounds)
const tokens = Number(values.tokens)
const MODEL = 'bench-chat'

const service = await startService()
try {
  const {family} = await writeTinyChatModel(await temporaryDirectory(), MODEL)
  await callApi(service, 'POST', '/v1/model_registrations/LLM', {model: family, persist: false})
  const launched = await callApi(service, 'POST', '/v1/models', {model_engine: 'llama.cpp', model_name: MODEL, n_ctx: 1024, n_parallel: 1, n_threads: 1})
  if (launched.status !== 200) throw new Error(JSON.stringify(launched.body))
  const client = new OpenAI({apiKey: 'unused', baseURL: `${service.url}/v1`, maxRetries: 0})
  const ollama = new Ollama({host: service.url})
  const input = 'Tell me a story.'
  const sides = [
    {
      async reply() {
        const stream = await client.chat.completions.create({max_tokens: tokens, messages: [{content: input, role: 'user'}], model: MODEL, stream: true, stream_options: {include_usage: true}})
        let count = 0
        for await (const chunk of stream) count = chunk.usage?.completion_tokens ?? count
        return count
      },
      clientCpu: 0,
      cpu: 0,
      label: '/v1/chat/completions',
      walls: [] as number[],
    },
    {
      async reply() {
        const stream = await client.responses.create({input, max_output_tokens: tokens, model: MODEL, store: false, stream: true})
        let count = 0
        for await (const event of stream) if (event.type === 'response.incomplete' || event.type === 'response.completed') count = event.response.usage?.output_tokens ?? 0
        return count
      },
      clientCpu: 0,
      cpu: 0,
      label: '/v1/responses',
      walls: [] as number[],
    },
    {
      async reply() {
        const stream = await ollama.chat({messages: [{content: input, role: 'user'}], model: MODEL, options: {num_predict: tokens}, stream: true})
        let count = 0
        for await (const part of stream) count = part.done ? part.eval_count : count
        return count
      },
      clientCpu: 0,
      cpu: 0,
      label: '/api/chat',
      walls: [] as number[],
    },
  ]
  // A first reply on each side warms the model and the routes. Then the routes take turns until the service's first
  // major GC, which collects what starting left (30 MB of module loading): 35–65 ms of marking, charged to whichever
  // route allocates while it runs, which over 30 rounds had added 1.2–2 ms to every reply of one route.
  let warmUps = 1
  for (const side of sides) await side.reply()
  while ((await majorCollections(service.url)) === 0 && warmUps < 100) {
    for (const side of sides) await side.reply()
    warmUps++
  }

  console.log(`load average ${loadavg().map((n) => n.toFixed(2)).join(' ')}; ${warmUps} warm-up rounds; ${rounds} streamed replies of ${tokens} tokens on each route`)
  for (let i = 0; i < rounds; i++) {
    // Which route goes first turns, so a burst of other work on the machine does not favour one.
    for (const side of [...sides.slice(i % sides.length), ...sides.slice(0, i % sides.length)]) {
      const before = await processCpuMs(service.process.pid!)
      const clientBefore = process.cpuUsage()
      const start = performance.now()
      const count = await side.reply()
      side.walls.push(performance.now() - start)
      const client = process.cpuUsage(clientBefore)
      side.clientCpu += (client.user + client.system) / 1000
      side.cpu += (await processCpuMs(service.process.pid!)) - before
      if (count !== tokens) throw new Error(`${side.label} answered ${count} tokens, not ${tokens}`)
    }
  }

  const perToken = (ms: number) => (ms / (rounds * tokens)).toFixed(3)
  for (const side of sides)
    console.log(`${side.label}: ${median(side.walls).toFixed(1)} ms a reply (median), service CPU ${perToken(side.cpu)} ms a token, client CPU ${perToken(side.clientCpu)}`)
  const [chat, ...others] = sides
  for (const side of others)
    console.log(
      `${side.label} / chat: wall ${(median(side.walls) / median(chat.walls)).toFixed(2)}, service CPU ${(side.cpu / chat.cpu).toFixed(2)}, client CPU ${(side.clientCpu / chat.clientCpu).toFixed(2)}`,
    )
} finally {
  await service.stop()
}

/** How many major (mark-compact) collections the service has run, from its Prometheus metrics. */
async function majorCollections(url: string): Promise<number> {
  const metrics = await (await fetch(`${url}/metrics`)).text()
  return Number(/^nodejs_gc_duration_seconds_count\{kind="major"\} (\d+)$/m.exec(metrics)?.[1] ?? 0)
}
