/**
 * Flexible ONNX inference: requests per second through our API (`POST /v1/flexible/infers`, the model in its own
 * process) against ONNX Runtime used directly in this process on the same file, with the same concurrency, the same
 * inputs and the same session options (THREADS intra-op threads, spinning off: session-options.ts), in one run. The
 * two sides alternate round by round (ours, direct, direct, ours, …) so that the machine's load drifting cancels.
 * Five workloads: `linear` (3×2, so nearly all of a request is the service's overhead), and multilayer perceptrons of 4
 * hidden layers 1024, 1448 and 2048 wide (16 rows of 64 a request, and 128 rows on the 2048-wide one: a mid-size
 * workload), which do a real model's work with little JSON. Each MLP is also launched with `max_batch_size`
 * (dynamic batching) and run at 4 and 16 streams against the direct side at the same concurrency, where each call
 * runs its own request, as a program calling ONNX Runtime in-process would.
 * Beside the rates: the CPU time a request costs each process (the service and the model's process from /proc, on
 * Linux; this one, the client (Node's HTTP client, see postJson), and the direct side, from process.cpuUsage), which
 * a loaded machine disturbs less than it does the rates, and the fixed cost of a request at one stream (its time
 * through us less its time directly). Runs on its own with `node --import tsx bench/flexible-onnx.ts`, and as part
 * of `npm run bench`.
 */
import {existsSync, readFileSync} from 'node:fs'
import {Agent, request} from 'node:http'
import {join} from 'node:path'

import {InferenceSession, Tensor} from 'onnxruntime-node'

import {sessionOptions} from '../plugins/engine-onnxruntime/src/session-options.js'
import {writeLinearModel, writeMlpModel} from '../test/helpers/onnx-models.js'
import {callApi, type RunningService, startService, temporaryDirectory} from '../test/helpers/service.js'

const ROUND_SECONDS = 1
/** Rounds per side and cell; the order alternates, so each side runs first in half of them. */
const ROUNDS = 4
/** Intra-op threads on both sides: the cores of the machine the numbers in docs/benchmarks.md come from. */
const THREADS = 2

interface Workload {
  name: string
  write(path: string): Promise<void>
  inputs: Record<string, {dims: number[]; values: number[]}>
  /** Whether every input and output has a dynamic first dimension, so the model can be launched with max_batch_size. */
  batchable: boolean
}

const rows = (count: number, width: number) => Array.from({length: count * width}, (_, index) => ((index * 7) % 13) / 13 - 0.5)
const nest = (values: number[], width: number) => Array.from({length: values.length / width}, (_, row) => values.slice(row * width, (row + 1) * width))
const mlp = (width: number, count = 16): Workload => ({
  batchable: true,
  inputs: {x: {dims: [count, 64], values: rows(count, 64)}},
  name: count === 16 ? `mlp-${width}` : `mlp-${width}x${count}`,
  write: (path) => writeMlpModel(path, {inputs: 64, layers: 4, outputs: 16, width}),
})

const WORKLOADS: Workload[] = [
  {
    // Not batchable: bias has a fixed first dimension (2), the same for every request.
    batchable: false,
    inputs: {bias: {dims: [2], values: [0.1, 0.2]}, x: {dims: [1, 3], values: [1, -1, 2]}},
    name: 'linear',
    write: (path) => writeLinearModel(path, [[1, 2], [3, 4], [5, 6]]),
  },
  mlp(1024),
  mlp(1448),
  mlp(2048),
  // A mid-size workload: 128 rows a request through the 2048-wide MLP, 10-20 ms a run on 2 cores.
  mlp(2048, 128),
]

/**
 * The cells of a workload: without batching at 1 and 4 streams; a batchable one also at 16, and launched with
 * max_batch_size at 4 and 16.
 */
const CELLS = [
  {batched: false, concurrency: 1},
  {batched: false, concurrency: 4},
  {batched: false, batchableOnly: true, concurrency: 16},
  {batched: true, concurrency: 4},
  {batched: true, concurrency: 16},
]
/** Streams at most in a batched cell: max_batch_size holds one request of each. */
const MOST_STREAMS = 16

/** User and system CPU milliseconds a process has used so far; undefined where /proc cannot say. */
function cpuMilliseconds(pid: number | undefined): number | undefined {
  if (pid === undefined || !existsSync(`/proc/${pid}/stat`)) return undefined
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100
}

interface Tally {
  requests: number
  seconds: number
  /** CPU milliseconds of the service, the model's process and this process over the rounds. */
  cpu: [number, number, number]
}

const ownCpuMilliseconds = () => {
  const {system, user} = process.cpuUsage()
  return (system + user) / 1000
}

/** `concurrency` callers each calling `once` back to back for `seconds`; adds what they completed to `tally`. */
async function round(once: () => Promise<void>, concurrency: number, tally: Tally, pids: Array<number | undefined>): Promise<void> {
  const before = [...pids.map((pid) => cpuMilliseconds(pid) ?? Number.NaN), ownCpuMilliseconds()]
  const start = performance.now()
  const deadline = start + ROUND_SECONDS * 1000
  await Promise.all(
    Array.from({length: concurrency}, async () => {
      while (performance.now() < deadline) {
        await once()
        tally.requests++
      }
    }),
  )
  tally.seconds += (performance.now() - start) / 1000
  const after = [...pids.map((pid) => cpuMilliseconds(pid) ?? Number.NaN), ownCpuMilliseconds()]
  for (const index of [0, 1, 2]) tally.cpu[index] += after[index] - before[index]
}

/**
 * The load generator's call: Node's own HTTP client on kept-alive connections, which costs this process (on the
 * cores the service and ONNX Runtime use) a half to a third of the CPU of fetch for the same request. The JSON
 * answer is parsed, as a caller would.
 */
const keptAlive = new Agent({keepAlive: true})
function postJson(url: string, body: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const outgoing = request(url, {agent: keptAlive, headers: {'content-length': Buffer.byteLength(body), 'content-type': 'application/json'}, method: 'POST'}, (response) => {
      let text = ''
      response.setEncoding('utf8')
      response.on('data', (piece: string) => (text += piece))
      response.on('error', reject)
      response.on('end', () => {
        if (response.statusCode === 200) resolve(JSON.parse(text))
        else reject(new Error(text))
      })
    })
    outgoing.on('error', reject)
    outgoing.end(body)
  })
}

/** Launches the workload's file as `name`, with `parameters` besides the threads; answers the model process's pid. */
async function launch(service: RunningService, name: string, path: string, parameters: Record<string, unknown> = {}): Promise<number | undefined> {
  await callApi(service, 'POST', '/v1/model_registrations/flexible', {model: {launcher: 'onnx', model_name: name, model_uri: path}, persist: false})
  const launched = await callApi(service, 'POST', '/v1/models', {intra_op_num_threads: THREADS, model_name: name, model_type: 'flexible', ...parameters})
  if (launched.status !== 200) throw new Error(JSON.stringify(launched.body))
  return ((await callApi(service, 'GET', `/v1/models/${name}`)).body as {pid: number | null}).pid ?? undefined
}

export async function benchFlexibleOnnx(service: RunningService, print: (line: string) => void, only?: string[]): Promise<Record<string, unknown>> {
  const work = await temporaryDirectory('service-bench-onnx-')
  const results: Record<string, unknown> = {}
  print(
    `\nflexible ONNX inference (requests/s, ${THREADS} intra-op threads both sides; batched: launched with max_batch_size, the direct side one request a run) | streams | ours | ONNX Runtime in-process | ours/direct | fixed cost ms | CPU ms a request: service + model process + client (direct)`,
  )
  for (const workload of WORKLOADS.filter(({name}) => !only || only.includes(name))) {
    const path = join(work, `${workload.name}.onnx`)
    await workload.write(path)
    const name = `bench-onnx-${workload.name}`
    const batchedName = `${name}-batched`
    const modelPids = new Map([[name, await launch(service, name, path)]])
    if (workload.batchable) modelPids.set(batchedName, await launch(service, batchedName, path, {max_batch_size: MOST_STREAMS * workload.inputs.x.dims[0]}))
    const inputs = Object.fromEntries(Object.entries(workload.inputs).map(([input, {dims, values}]) => [input, dims.length === 1 ? values : nest(values, dims[1])]))
    const oursOn = (model: string) => {
      const body = JSON.stringify({model, ...inputs})
      return () => postJson(`${service.url}/v1/flexible/infers`, body)
    }

    const session = await InferenceSession.create(path, sessionOptions(THREADS))
    const direct = async () => {
      const feeds = Object.fromEntries(Object.entries(workload.inputs).map(([input, {dims, values}]) => [input, new Tensor('float32', Float32Array.from(values), dims)]))
      const outputs = await session.run(feeds)
      for (const output of Object.values(outputs)) Array.from(output.data as Float32Array)
    }

    for (const model of modelPids.keys()) for (let index = 0; index < 3; index++) await Promise.all([oursOn(model)(), direct()])
    const byLevel: Record<string, unknown> = {}
    for (const {batched, concurrency} of CELLS.filter((cell) => workload.batchable || !(cell.batched || cell.batchableOnly))) {
      const model = batched ? batchedName : name
      const ours = oursOn(model)
      const oursTally: Tally = {cpu: [0, 0, 0], requests: 0, seconds: 0}
      const directTally: Tally = {cpu: [0, 0, 0], requests: 0, seconds: 0}
      // ours, direct, direct, ours, ours, direct, …
      for (let index = 0; index < 2 * ROUNDS; index++)
        await (Math.floor((index + 1) / 2) % 2 === 0 ? round(ours, concurrency, oursTally, [service.process.pid, modelPids.get(model)]) : round(direct, concurrency, directTally, [undefined, undefined]))

      const oursRate = oursTally.requests / oursTally.seconds
      const directRate = directTally.requests / directTally.seconds
      const cell = {
        direct_rps: directRate,
        fixed_cost_ms: 1000 / oursRate - 1000 / directRate,
        client_cpu_ms: oursTally.cpu[2] / oursTally.requests,
        direct_cpu_ms: directTally.cpu[2] / directTally.requests,
        model_cpu_ms: oursTally.cpu[1] / oursTally.requests,
        ours_rps: oursRate,
        ratio: oursRate / directRate,
        service_cpu_ms: oursTally.cpu[0] / oursTally.requests,
      }
      byLevel[`${batched ? 'batched_' : ''}c${concurrency}`] = cell
      const fixed = concurrency === 1 ? cell.fixed_cost_ms.toFixed(2) : '-'
      print(
        `${workload.name.padEnd(13)} | ${batched ? 'batched ' : ''}${String(concurrency).padStart(2)} | ${oursRate.toFixed(1)} | ${directRate.toFixed(1)} | ${cell.ratio.toFixed(2)} | ${fixed} | ${cell.service_cpu_ms.toFixed(2)} + ${cell.model_cpu_ms.toFixed(2)} + ${cell.client_cpu_ms.toFixed(2)} (${cell.direct_cpu_ms.toFixed(2)})`,
      )
    }

    results[workload.name] = byLevel
    await session.release()
    for (const model of modelPids.keys()) await callApi(service, 'DELETE', `/v1/models/${model}`)
  }

  return results
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const service = await startService()
  try {
    // `node --import tsx bench/flexible-onnx.ts mlp-1024 linear` runs those workloads only.
    await benchFlexibleOnnx(service, console.log, process.argv.length > 2 ? process.argv.slice(2) : undefined)
  } finally {
    await service.stop()
  }
}
