/**
 * Flexible ONNX inference: requests per second through our API (`POST /v1/flexible/infers`, the model in its own
 * process) against ONNX Runtime used directly in this process on the same file, with the same concurrency and the
 * same inputs, in one run. Three models: `linear` (3×2, so nearly all of a request is the service's overhead), and
 * multilayer perceptrons of 4 hidden layers 1024 and 2048 wide (16 rows of 64 a request), which do a real model's
 * work with little JSON. Runs on its own with
 * `node --import tsx bench/flexible-onnx.ts`, and as part of `npm run bench`.
 */
import {join} from 'node:path'

import {InferenceSession, Tensor} from 'onnxruntime-node'

import {writeLinearModel, writeMlpModel} from '../test/helpers/onnx-models.js'
import {callApi, type RunningService, startService, temporaryDirectory} from '../test/helpers/service.js'

const SECONDS = 4
const CONCURRENCY = [1, 4]

interface Workload {
  name: string
  write(path: string): Promise<void>
  inputs: Record<string, {dims: number[]; values: number[]}>
}

const rows = (count: number, width: number) => Array.from({length: count * width}, (_, index) => ((index * 7) % 13) / 13 - 0.5)
const nest = (values: number[], width: number) => Array.from({length: values.length / width}, (_, row) => values.slice(row * width, (row + 1) * width))

const WORKLOADS: Workload[] = [
  {
    inputs: {bias: {dims: [2], values: [0.1, 0.2]}, x: {dims: [1, 3], values: [1, -1, 2]}},
    name: 'linear',
    write: (path) => writeLinearModel(path, [[1, 2], [3, 4], [5, 6]]),
  },
  {
    inputs: {x: {dims: [16, 64], values: rows(16, 64)}},
    name: 'mlp-1024',
    write: (path) => writeMlpModel(path, {inputs: 64, layers: 4, outputs: 16, width: 1024}),
  },
  {
    inputs: {x: {dims: [16, 64], values: rows(16, 64)}},
    name: 'mlp-2048',
    write: (path) => writeMlpModel(path, {inputs: 64, layers: 4, outputs: 16, width: 2048}),
  },
]

/** Requests completed per second by `concurrency` callers each calling `once` back to back for SECONDS. */
async function throughput(once: () => Promise<void>, concurrency: number): Promise<number> {
  for (let i = 0; i < 3; i++) await once()
  const deadline = performance.now() + SECONDS * 1000
  let done = 0
  const start = performance.now()
  await Promise.all(
    Array.from({length: concurrency}, async () => {
      while (performance.now() < deadline) {
        await once()
        done++
      }
    }),
  )
  return done / ((performance.now() - start) / 1000)
}

export async function benchFlexibleOnnx(service: RunningService, print: (line: string) => void): Promise<Record<string, unknown>> {
  const work = await temporaryDirectory('service-bench-onnx-')
  const results: Record<string, unknown> = {}
  print('\nflexible ONNX inference (requests/s) | streams | ours | ONNX Runtime in-process | ours/direct')
  for (const workload of WORKLOADS) {
    const path = join(work, `${workload.name}.onnx`)
    await workload.write(path)
    const name = `bench-onnx-${workload.name}`
    await callApi(service, 'POST', '/v1/model_registrations/flexible', {model: {launcher: 'onnx', model_name: name, model_uri: path}, persist: false})
    const launched = await callApi(service, 'POST', '/v1/models', {model_name: name, model_type: 'flexible'})
    if (launched.status !== 200) throw new Error(JSON.stringify(launched.body))
    const body = JSON.stringify({
      model: name,
      ...Object.fromEntries(Object.entries(workload.inputs).map(([input, {dims, values}]) => [input, dims.length === 1 ? values : nest(values, dims[1])])),
    })
    const ours = async () => {
      const response = await fetch(`${service.url}/v1/flexible/infers`, {body, headers: {'content-type': 'application/json'}, method: 'POST'})
      if (!response.ok) throw new Error(await response.text())
      await response.json()
    }

    const session = await InferenceSession.create(path)
    const direct = async () => {
      const feeds = Object.fromEntries(Object.entries(workload.inputs).map(([input, {dims, values}]) => [input, new Tensor('float32', Float32Array.from(values), dims)]))
      const outputs = await session.run(feeds)
      for (const output of Object.values(outputs)) Array.from(output.data as Float32Array)
    }

    const byLevel: Record<string, unknown> = {}
    for (const concurrency of CONCURRENCY) {
      const oursRate = await throughput(ours, concurrency)
      const directRate = await throughput(direct, concurrency)
      byLevel[`c${concurrency}`] = {direct_rps: directRate, ours_rps: oursRate, ratio: oursRate / directRate}
      print(`${workload.name.padEnd(36)} | ${String(concurrency).padStart(7)} | ${oursRate.toFixed(1)} | ${directRate.toFixed(1)} | ${(oursRate / directRate).toFixed(2)}`)
    }

    results[workload.name] = byLevel
    await session.release()
    await callApi(service, 'DELETE', `/v1/models/${name}`)
  }

  return results
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const service = await startService()
  try {
    await benchFlexibleOnnx(service, console.log)
  } finally {
    await service.stop()
  }
}
