/**
 * What a streamed token costs each process, ours against llama-server, on the same generated GGUF in one run: the
 * CPU time (every thread, from /proc/<pid>/task/<tid>/schedstat, in nanoseconds) that the service, the model
 * process (its main thread apart from its compute threads) and llama-server spend per generated token, next to
 * tok/s and TTFT, the two sides alternating round by round. On a small model the decode itself is well under a
 * millisecond a token, so what is left is each server's fixed cost per token and per request; on a 2-core machine
 * the bench client competes for the same cores, so CPU time says more than wall time.
 *
 *   node --import tsx bench/token-cost.ts [--size small] [--streams 1,16] [--rounds 8] [--tokens 128]
 *
 * `NODE_OPTIONS='--cpu-prof --cpu-prof-dir=DIR'` profiles the service and its model process too (written when they
 * exit, at the end).
 */
import {readdir, readFile, rm} from 'node:fs/promises'
import {cpus, loadavg} from 'node:os'
import {join} from 'node:path'
import {parseArgs} from 'node:util'

import {RANDOM_LLAMA_SIZES, writeRandomLlamaGguf} from '../plugins/engine-llama-cpp/src/gguf/random-llama.js'
import {callApi, startService, temporaryDirectory} from '../test/helpers/service.js'
import {ensureLlamaServer, startLlamaServer} from './llama-server-binary.js'
import {median, show, streamChat, summary, threadTimes} from './measure.js'

const {values: options} = parseArgs({
  options: {
    rounds: {default: '8', type: 'string'},
    size: {default: 'small', type: 'string'},
    streams: {default: '1,16', type: 'string'},
    tokens: {default: '128', type: 'string'},
  },
})

/** The process ids under `pid` (itself included), with their command lines. */
async function descendants(pid: number): Promise<Array<{pid: number; command: string}>> {
  const command = (await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')).replaceAll('\0', ' ')
  const children = await Promise.all(
    (await readdir(`/proc/${pid}/task`)).map(async (tid) => (await readFile(`/proc/${pid}/task/${tid}/children`, 'utf8').catch(() => '')).trim().split(' ').filter(Boolean).map(Number)),
  )
  const below = await Promise.all(children.flat().map((child) => descendants(child)))
  return [{command, pid}, ...below.flat()]
}

/** CPU milliseconds spent by each named part between two readings. */
function spent(parts: Record<string, {pid: number; threads?: 'main' | 'others'}>, before: Record<string, Map<number, number>>, after: Record<string, Map<number, number>>) {
  const result: Record<string, number> = {}
  for (const [name, {pid, threads}] of Object.entries(parts)) {
    let sum = 0
    for (const [tid, time] of after[name]) if (threads === undefined || (threads === 'main') === (tid === pid)) sum += time - (before[name].get(tid) ?? 0)
    result[name] = sum / 1e6
  }

  return result
}

const binary = await ensureLlamaServer()
const work = await temporaryDirectory('service-token-cost-')
const modelPath = join(work, 'model.gguf')
await writeRandomLlamaGguf(modelPath, RANDOM_LLAMA_SIZES[options.size as keyof typeof RANDOM_LLAMA_SIZES])
const service = await startService()
const tokens = Number(options.tokens)
console.log(`${options.size} model, ${tokens} tokens a stream, ${options.rounds} rounds a side; load average ${loadavg().map((load) => load.toFixed(2)).join(' ')}`)
try {
  const name = `cost-${options.size}`
  const family = {model_name: name, model_specs: [{model_format: 'ggufv2', model_size_in_billions: 1, model_uri: `file://${modelPath}`, quantization: 'f32'}]}
  await callApi(service, 'POST', '/v1/model_registrations/LLM', {model: family, persist: false})
  for (const streams of options.streams.split(',').map(Number)) {
    const [slots, context] = streams <= 4 ? [4, 4096] : [streams, 512]
    const launched = await callApi(service, 'POST', '/v1/models', {model_engine: 'llama.cpp', model_name: name, n_ctx: context, n_parallel: slots})
    if (launched.status !== 200) throw new Error(JSON.stringify(launched.body))
    const server = await startLlamaServer(binary, modelPath, {contextPerSlot: context, slots, threads: cpus().length})
    try {
      const processes = await descendants(service.process.pid!)
      const servicePid = processes.find((each) => /service-local/.test(each.command))!.pid
      const modelPid = processes.find((each) => /instance-host/.test(each.command))!.pid
      const sides = {
        'llama-server': {parts: {'llama-server': {pid: server.process.pid!}}, url: server.url},
        ours: {parts: {'model compute': {pid: modelPid, threads: 'others' as const}, 'model main': {pid: modelPid, threads: 'main' as const}, service: {pid: servicePid}}, url: `${service.url}/v1`},
      }
      const samples: Record<string, Array<{cpu: Record<string, number>; tokens: number; ttft: number; wall: number}>> = {'llama-server': [], ours: []}
      const errors: Record<string, number> = {'llama-server': 0, ours: 0}
      for (const side of Object.values(sides)) await streamChat(side.url, {ignore_eos: true, max_tokens: 8, model: name})
      for (let round = 0; round < Number(options.rounds); round++)
        for (const sideName of round % 2 ? ['llama-server', 'ours'] : ['ours', 'llama-server']) {
          const side = sides[sideName as keyof typeof sides]
          const read = async () => Object.fromEntries(await Promise.all(Object.entries(side.parts).map(async ([part, {pid}]) => [part, await threadTimes(pid)] as const)))
          const before = await read()
          const started = performance.now()
          const settled = await Promise.allSettled(Array.from({length: streams}, () => streamChat(side.url, {ignore_eos: true, max_tokens: tokens, model: name})))
          const wall = performance.now() - started
          const cpu = spent(side.parts, before, await read())
          const results = settled.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []))
          errors[sideName] += settled.length - results.length
          // A round with a failed stream is not counted: its CPU time covers tokens the client never got.
          if (results.length === streams) samples[sideName].push({cpu, tokens: results.reduce((sum, each) => sum + each.tokens, 0), ttft: median(results.map((each) => each.ttft)), wall})
        }

      console.log(`\n${streams} stream(s) on ${slots} slots | tok/s | TTFT ms | CPU ms per token`)
      for (const [sideName, list] of Object.entries(samples)) {
        const perToken = Object.keys(list[0].cpu).map((part) => `${part} ${show(summary(list.map((each) => each.cpu[part] / each.tokens)), 3)}`)
        const total = summary(list.map((each) => Object.values(each.cpu).reduce((sum, ms) => sum + ms, 0) / each.tokens))
        if (list.length === 0) {
          console.log(`${sideName} | every round had a failed stream (${errors[sideName]} errors)`)
          continue
        }

        console.log(`${sideName} | ${show(summary(list.map((each) => each.tokens / (each.wall / 1000))))} | ${show(summary(list.map((each) => each.ttft)))} | ${perToken.join(', ')}; all ${show(total, 3)}; ${list.length} rounds, ${errors[sideName]} failed streams`)
      }
    } finally {
      await server.stop()
      await callApi(service, 'DELETE', `/v1/models/${name}`)
    }
  }
} finally {
  await service.stop()
  await rm(work, {force: true, recursive: true})
  console.log(`\nload average after: ${loadavg().map((load) => load.toFixed(2)).join(' ')}`)
}
