/**
 * Image generation time through our API (`POST /v1/images/generations`, the diffusers engine's program) against
 * diffusers called directly in a Python process of its own (`bench/diffusers-direct.py`), with the same tiny random
 * pipeline, size, steps, seed and torch threads, in one run. Runs on its own with
 * `node --import tsx bench/image-diffusers.ts`, and as part of `npm run bench`.
 */
import {execa} from 'execa'
import {readdir} from 'node:fs/promises'
import {existsSync} from 'node:fs'
import {join} from 'node:path'

import {TEST_CACHE, uvFromPyPI} from '../test/helpers/python-tools.js'
import {callApi, ROOT, type RunningService, startService} from '../test/helpers/service.js'
import {median} from './measure.js'

const SIZE = 32
const STEPS = 10
const THREADS = 2
const REPEATS = 3
const ENVIRONMENTS = join(TEST_CACHE, 'virtualenv')

/** What a service needs to make the engine's environment with uv, in the cache the tests use too. */
export async function diffusersServiceEnv(): Promise<Record<string, string>> {
  return {PATH: `${await uvFromPyPI()}:${process.env.PATH}`, SERVICE_VIRTUALENV_DIR: ENVIRONMENTS}
}

/** The interpreter of the environment the engine runs in: the one of them that has diffusers. */
async function enginePython(): Promise<string> {
  for (const name of await readdir(ENVIRONMENTS)) {
    const python = join(ENVIRONMENTS, name, 'bin', 'python')
    if (existsSync(python) && (await execa(python, ['-c', 'import diffusers'], {reject: false})).exitCode === 0) return python
  }

  throw new Error(`no environment with diffusers under ${ENVIRONMENTS}`)
}

export async function benchImageDiffusers(service: RunningService, print: (line: string) => void): Promise<Record<string, unknown>> {
  const launched = await callApi(service, 'POST', '/v1/models', {cpu_threads: THREADS, model_name: 'tiny-random-image', model_type: 'image'})
  if (launched.status !== 200) throw new Error(JSON.stringify(launched.body))
  const ours: number[] = []
  for (let index = 0; index <= REPEATS; index++) {
    const start = performance.now()
    const reply = await callApi(service, 'POST', '/v1/images/generations', {model: 'tiny-random-image', prompt: 'a lighthouse at dawn', seed: index, size: `${SIZE}x${SIZE}`, steps: STEPS})
    if (reply.status !== 200) throw new Error(JSON.stringify(reply.body))
    if (index > 0) ours.push((performance.now() - start) / 1000)
  }

  const direct = await execa(await enginePython(), [join(ROOT, 'bench/diffusers-direct.py'), join(ROOT, 'plugins/engine-diffusers/python'), String(SIZE), String(STEPS), String(THREADS), String(REPEATS)])
  const directTimes = JSON.parse(direct.stdout.trim().split('\n').at(-1)!) as number[]
  const ratio = median(ours) / median(directTimes)
  print(`\nimage generation (tiny-random-image, ${SIZE}x${SIZE}, ${STEPS} steps, ${THREADS} threads, median of ${REPEATS}): ours ${median(ours).toFixed(3)} s, diffusers directly ${median(directTimes).toFixed(3)} s, ours/direct ${ratio.toFixed(3)}`)
  await callApi(service, 'DELETE', '/v1/models/tiny-random-image')
  return {direct_s: directTimes, ours_s: ours, ratio}
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const service = await startService({env: await diffusersServiceEnv()})
  try {
    await benchImageDiffusers(service, console.log)
  } finally {
    await service.stop()
  }
}
