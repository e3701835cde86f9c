/**
 * Image generation time through our API (`POST /v1/images/generations`, the diffusers engine's program) against
 * diffusers called directly in a Python process of its own (`bench/diffusers-direct.py`), with the same tiny random
 * pipeline, size, steps, guidance scale and torch threads, and the same PNG and base64 encoding, in one run. The two sides alternate
 * image by image (ours, direct, direct, ours, …) so that the machine's load drifting cancels. What our path adds to an
 * image is taken apart from the logs: the service's access line (the request inside the service), and the engine
 * program's line per image (generation, PNG, base64). Runs on its own with `node --import tsx bench/image-diffusers.ts`,
 * and as part of `npm run bench`.
 */
import {execa} from 'execa'
import {existsSync} from 'node:fs'
import {readdir, readFile} from 'node:fs/promises'
import {join} from 'node:path'
import {createInterface} from 'node:readline'

import {TEST_CACHE, uvFromPyPI} from '../test/helpers/python-tools.js'
import {callApi, ROOT, type RunningService, startService} from '../test/helpers/service.js'
import {median} from './measure.js'

/**
 * A toy image (40 ms of denoising, so our fixed cost per request shows) and one more like a real model's (a second or
 * more of denoising per image).
 */
const WORKLOADS = [
  {size: 32, steps: 10},
  {size: 128, steps: 20},
]
const THREADS = 2
/** Given on both sides: diffusers' own default (7.5) runs the UNet twice a step, the catalogue's default (1) once. */
const GUIDANCE = 1
/** Images per side; the first of each side warms up and is not counted. */
const REPEATS = 8
const MODEL = 'tiny-random-image'
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

/** diffusers-direct.py, loaded once; each call generates one image and answers what its parts took, in seconds. */
async function directGenerator(size: number, steps: number) {
  const child = execa(await enginePython(), [join(ROOT, 'bench/diffusers-direct.py'), join(ROOT, 'plugins/engine-diffusers/python'), String(size), String(steps), String(THREADS), String(GUIDANCE)], {
    stderr: 'inherit',
    stdin: 'pipe',
  })
  const lines = createInterface({input: child.stdout!})[Symbol.asyncIterator]()
  const next = async () => JSON.parse(((await lines.next()).value as string | undefined) ?? 'null') as Record<string, number>
  await next()
  return {
    async generate(seed: number) {
      child.stdin!.write(`${seed}\n`)
      return next()
    },
    async stop() {
      child.stdin!.end()
      await child
    },
  }
}

/** Numbers after `key` in each line of `text` that matches `pattern`, in order. */
const valuesIn = (text: string, pattern: RegExp, key: string) =>
  text
    .split('\n')
    .filter((line) => pattern.test(line))
    .map((line) => Number(new RegExp(`${key}[= ]([0-9.]+)`).exec(line)![1]))

const ms = (seconds: number[]) => median(seconds) * 1000

export async function benchImageDiffusers(service: RunningService, print: (line: string) => void): Promise<Record<string, unknown>> {
  const launched = await callApi(service, 'POST', '/v1/models', {cpu_threads: THREADS, model_name: MODEL, model_type: 'image'})
  if (launched.status !== 200) throw new Error(JSON.stringify(launched.body))
  const results: Record<string, unknown> = {}
  for (const {size, steps} of WORKLOADS) results[`${size}x${size}_${steps}_steps`] = await benchWorkload(service, size, steps, print)
  await callApi(service, 'DELETE', `/v1/models/${MODEL}`)
  return results
}

/** One size and step count: the two sides alternating, then what our side's time is made of, from the logs. */
async function benchWorkload(service: RunningService, size: number, steps: number, print: (line: string) => void): Promise<Record<string, unknown>> {
  const direct = await directGenerator(size, steps)
  const ours: number[] = []
  const directParts: Array<Record<string, number>> = []
  try {
    // ours, direct, direct, ours, … ; image 0 of each side warms up.
    for (let index = 0; index < 2 * (REPEATS + 1); index++) {
      const seed = Math.floor(index / 2)
      if (Math.floor((index + 1) / 2) % 2 === 0) {
        const start = performance.now()
        const reply = await callApi(service, 'POST', '/v1/images/generations', {guidance_scale: GUIDANCE, model: MODEL, prompt: 'a lighthouse at dawn', seed, size: `${size}x${size}`, steps})
        if (reply.status !== 200) throw new Error(JSON.stringify(reply.body))
        if (seed > 0) ours.push((performance.now() - start) / 1000)
      } else {
        const parts = await direct.generate(seed)
        if (seed > 0) directParts.push(parts)
      }
    }
  } finally {
    await direct.stop()
  }

  const counted = (values: number[]) => values.slice(-REPEATS)
  const programLog = await readFile(join(service.home, 'logs', 'models', `${MODEL}.log`), 'utf8')
  const generated = counted(valuesIn(programLog, /image 1 of 1: generated in/, 'generated in'))
  const png = counted(valuesIn(programLog, /image 1 of 1: generated in/, 'PNG'))
  const base64 = counted(valuesIn(programLog, /image 1 of 1: generated in/, 'base64'))
  const serviceLog = await readFile(join(service.home, 'logs', 'service-local.log'), 'utf8')
  const inService = counted(valuesIn(serviceLog, /POST \/v1\/images\/generations status=200/, 'duration_ms').map((value) => value / 1000))
  const directTotal = directParts.map((parts) => parts.generate_s + parts.png_s + parts.base64_s)
  const directGenerate = directParts.map((parts) => parts.generate_s)
  const ratio = median(ours) / median(directTotal)
  const program = generated.map((value, index) => value + png[index] + base64[index])
  const hop = inService.map((value, index) => value - program[index])
  const http = ours.map((value, index) => value - inService[index])
  print(
    `\nimage generation (${MODEL}, ${size}x${size}, ${steps} steps, guidance ${GUIDANCE}, ${THREADS} threads, alternating, median of ${REPEATS}): ours ${median(ours).toFixed(3)} s, diffusers directly ${median(directTotal).toFixed(3)} s (generation ${median(directGenerate).toFixed(3)} s + PNG ${ms(directParts.map((parts) => parts.png_s)).toFixed(2)} ms + base64 ${ms(directParts.map((parts) => parts.base64_s)).toFixed(3)} ms), ours/direct ${ratio.toFixed(3)}`,
  )
  print(
    `  ours, taken apart (medians): generation in the engine's program ${median(generated).toFixed(3)} s, PNG ${ms(png).toFixed(2)} ms, base64 ${ms(base64).toFixed(3)} ms; program to service (HTTP to the program, progress lines, IPC hop) ${ms(hop).toFixed(1)} ms; service to client (HTTP, JSON) ${ms(http).toFixed(1)} ms`,
  )
  return {direct: directParts, ours_s: ours, ours_parts: {base64_s: base64, generated_s: generated, hop_s: hop, http_s: http, png_s: png}, ratio}
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const service = await startService({env: await diffusersServiceEnv()})
  try {
    await benchImageDiffusers(service, console.log)
  } finally {
    await service.stop()
  }
}
