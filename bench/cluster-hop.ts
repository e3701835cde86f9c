/**
 * What the supervisor hop costs a streamed chat: the same tiny model, launched once on a cluster worker
 * (supervisor on 127.0.0.1, worker on 127.0.0.2) and once in `service-local`, alternating requests between
 * the two in the same run. Prints the median time to first token and total time of each.
 *
 *   npm run build && node --import tsx bench/cluster-hop.ts [requests]
 */
import {writeTinyChatModel} from '../test/helpers/models.js'
import {callApi, type RunningService, startProgram, temporaryDirectory} from '../test/helpers/service.js'

const requests = Number(process.argv[2] ?? 30)
const LAUNCH = {model_engine: 'llama.cpp', model_format: 'ggufv2', model_name: 'tiny-chat', model_size_in_billions: '0_5', model_uid: 'bench', n_ctx: 512, n_threads: 1, quantization: 'q4_0'}

async function streamedChat(url: string): Promise<{ttft: number; total: number}> {
  const started = performance.now()
  const response = await fetch(`${url}/v1/chat/completions`, {
    body: JSON.stringify({max_tokens: 16, messages: [{content: 'Hello there', role: 'user'}], model: 'bench', stream: true, temperature: 0}),
    headers: {'content-type': 'application/json'},
    method: 'POST',
  })
  let ttft = 0
  const decoder = new TextDecoder()
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>)
    if (!ttft && /"content":"[^"]/.test(decoder.decode(chunk))) ttft = performance.now() - started
  return {total: performance.now() - started, ttft}
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]

const {family} = await writeTinyChatModel(await temporaryDirectory())
const started: RunningService[] = []
try {
  const local = await startProgram('service-local', ['--port', '0'])
  started.push(local)
  const supervisor = await startProgram('service-supervisor', ['-H', '127.0.0.1', '-p', '0'])
  started.push(supervisor)
  started.push(await startProgram('service-worker', ['-e', supervisor.url, '-H', '127.0.0.2']))
  for (const service of [local, supervisor]) {
    await callApi(service, 'POST', '/v1/model_registrations/LLM', {model: family})
    const launched = await callApi(service, 'POST', '/v1/models', LAUNCH)
    if (launched.status !== 200) throw new Error(JSON.stringify(launched.body))
  }

  const results: Record<string, Array<{ttft: number; total: number}>> = {cluster: [], local: []}
  for (let i = 0; i < 3; i++) await Promise.all([streamedChat(local.url), streamedChat(supervisor.url)])
  for (let i = 0; i < requests; i++) {
    results.local.push(await streamedChat(local.url))
    results.cluster.push(await streamedChat(supervisor.url))
  }

  for (const [name, runs] of Object.entries(results))
    console.log(`${name.padEnd(8)} median TTFT ${median(runs.map((r) => r.ttft)).toFixed(1)} ms, median total ${median(runs.map((r) => r.total)).toFixed(1)} ms (${runs.length} streamed chats, 16 tokens)`)
} finally {
  for (const service of started.reverse()) await service.stop()
}
