/**
 * Image generation time through our API (`POST /v1/images/generations`, the stable-diffusion.cpp engine's program)
 * against stable-diffusion-cpp-python called directly in a Python process of its own (`bench/sdcpp-direct.py`), with
 * the same tiny-random-flux GGUF, size, steps, seed and threads, alternating the two sides within one run so a
 * change of load on the machine falls on both. Runs on its own with
 * `node --import tsx bench/image-stable-diffusion-cpp.ts`, and as part of `npm run bench`.
 */
import {execa} from 'execa'
import {readdir} from 'node:fs/promises'
import {loadavg} from 'node:os'
import {join} from 'node:path'
import {createInterface} from 'node:readline'

import {TINY_FLUX} from '../plugins/engine-stable-diffusion-cpp/src/tiny-flux.js'
import {callApi, ROOT, type RunningService, startService} from '../test/helpers/service.js'
import {diffusersServiceEnv} from './image-diffusers.js'
import {median} from './measure.js'

const MODEL = TINY_FLUX.model_name
/** The file the service writes the model to, in its cache. */
const MODEL_FILE = (TINY_FLUX.model_src as {generated: {gguf_model_file_name_template: string}}).generated.gguf_model_file_name_template
const SIZE = 128
const STEPS = 8
const THREADS = 2
const REPEATS = 5

async function findFile(folder: string, name: string): Promise<string | undefined> {
  for (const entry of await readdir(folder, {withFileTypes: true})) {
    const path = join(folder, entry.name)
    if (entry.isFile() && entry.name === name) return path
    if (entry.isDirectory()) {
      const found = await findFile(path, name)
      if (found) return found
    }
  }

  return undefined
}

export async function benchImageStableDiffusionCpp(service: RunningService, print: (line: string) => void): Promise<Record<string, unknown>> {
  const launched = await callApi(service, 'POST', '/v1/models', {cpu_threads: THREADS, model_engine: 'stable-diffusion.cpp', model_name: MODEL, model_type: 'image'})
  if (launched.status !== 200) throw new Error(JSON.stringify(launched.body))
  const {body: environments} = await callApi(service, 'GET', '/v1/virtualenvs')
  const environment = environments.list.find((each: {models: string[]}) => each.models.includes(MODEL))
  const direct = execa(join(environment.path, 'bin', 'python'), [join(ROOT, 'bench/sdcpp-direct.py'), (await findFile(service.home, MODEL_FILE))!, String(SIZE), String(STEPS), String(THREADS)], {stderr: 'ignore'})
  const lines = createInterface({input: direct.stdout!})[Symbol.asyncIterator]()
  // The script's own lines start with `== `; the others are sd.cpp's log.
  const nextAnswer = async (): Promise<string> => {
    for (;;) {
      const {done, value} = await lines.next()
      if (done) throw new Error('sdcpp-direct.py ended early')
      if (value.startsWith('== ')) return value.slice(3)
    }
  }

  await nextAnswer()

  const ours: number[] = []
  const directTimes: number[] = []
  const loads: number[] = []
  // The first of each side warms it up and is not counted.
  for (let index = 0; index <= REPEATS; index++) {
    const start = performance.now()
    const reply = await callApi(service, 'POST', '/v1/images/generations', {model: MODEL, prompt: 'a lighthouse at dawn', seed: index, size: `${SIZE}x${SIZE}`, steps: STEPS})
    if (reply.status !== 200) throw new Error(JSON.stringify(reply.body))
    const oursSeconds = (performance.now() - start) / 1000
    direct.stdin!.write(`${index}\n`)
    const directSeconds = Number(await nextAnswer())
    if (index === 0) continue
    ours.push(oursSeconds)
    directTimes.push(directSeconds)
    loads.push(loadavg()[0])
  }

  direct.stdin!.end()
  await direct
  const ratio = median(ours) / median(directTimes)
  print(
    `\nimage generation, stable-diffusion.cpp (${MODEL}, ${SIZE}x${SIZE}, ${STEPS} steps, ${THREADS} threads, median of ${REPEATS}, alternating, load ${Math.min(...loads).toFixed(1)}-${Math.max(...loads).toFixed(1)}): ours ${median(ours).toFixed(3)} s, binding directly ${median(directTimes).toFixed(3)} s, ours/direct ${ratio.toFixed(3)}`,
  )
  await callApi(service, 'DELETE', `/v1/models/${MODEL}`)
  return {direct_s: directTimes, load_average: loads, ours_s: ours, ratio}
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const service = await startService({env: await diffusersServiceEnv()})
  try {
    await benchImageStableDiffusionCpp(service, console.log)
  } finally {
    await service.stop()
  }
}
