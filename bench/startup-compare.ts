/**
 * Start-up costs of two or more checkouts (each built), measured in one run and alternating, so that a shared
 * machine's load weighs on all of them alike: `servicectl list` (against one service) and `servicectl --version`,
 * wall and CPU time (user and system, from /usr/bin/time) of each process; and service-local's RSS when idle (1.5 s
 * after it says it runs), its time to that line, and its first GET and first POST with a body.
 *
 *   node --import tsx bench/startup-compare.ts [--runs 20] [--starts 7] /path/to/other-checkout .
 */
import {execa} from 'execa'
import {readFile} from 'node:fs/promises'
import {loadavg} from 'node:os'
import {join, resolve} from 'node:path'
import {parseArgs} from 'node:util'

import {startProgram} from '../test/helpers/service.js'
import {summary} from './measure.js'

const {positionals, values: options} = parseArgs({allowPositionals: true, options: {runs: {default: '20', type: 'string'}, starts: {default: '7', type: 'string'}}})
const roots = positionals.map((root) => resolve(root))
if (roots.length === 0) throw new Error('name the checkouts to compare, e.g. `bench/startup-compare.ts ../main .`')

const show = (values: number[], unit: string) => {
  const {max, median, min} = summary(values)
  return `${median.toFixed(0)} ${unit} (${min.toFixed(0)}–${max.toFixed(0)})`
}

/** Wall and CPU milliseconds of one servicectl run. */
async function servicectlTime(root: string, args: string[], endpoint: string): Promise<{wall: number; cpu: number}> {
  const start = performance.now()
  const result = await execa('/usr/bin/time', ['-f', 'cpu %U %S', 'node', join(root, 'bin/servicectl.js'), ...args], {env: {SERVICE_ENDPOINT: endpoint}})
  const wall = performance.now() - start
  const [, user, system] = /cpu ([\d.]+) ([\d.]+)/.exec(result.stderr)!
  return {cpu: (Number(user) + Number(system)) * 1000, wall}
}

async function compareCli(args: string[]): Promise<void> {
  const service = await startProgram('service-local', ['--port', '0'], {programFile: join(roots[0], 'bin/service-local.js')})
  const times = roots.map(() => ({cpu: [] as number[], wall: [] as number[]}))
  try {
    for (let run = 0; run <= Number(options.runs); run++) {
      for (const [index, root] of roots.entries()) {
        const {cpu, wall} = await servicectlTime(root, args, service.url)
        // The first run of each warms the file and compile caches.
        if (run === 0) continue
        times[index].cpu.push(cpu)
        times[index].wall.push(wall)
      }
    }
  } finally {
    await service.stop()
  }

  for (const [index, root] of roots.entries()) console.log(`${root}: servicectl ${args.join(' ')} ${show(times[index].wall, 'ms')}, CPU ${show(times[index].cpu, 'ms')}`)
}

async function compareService(): Promise<void> {
  const measured = roots.map(() => ({firstGet: [] as number[], firstPost: [] as number[], ready: [] as number[], rss: [] as number[]}))
  for (let start = 0; start < Number(options.starts); start++) {
    for (const [index, root] of roots.entries()) {
      const started = performance.now()
      const service = await startProgram('service-local', ['--port', '0'], {programFile: join(root, 'bin/service-local.js')})
      try {
        measured[index].ready.push(performance.now() - started)
        await new Promise((resolve) => setTimeout(resolve, 1500))
        const status = await readFile(`/proc/${service.process.pid}/status`, 'utf8')
        measured[index].rss.push(Number(/VmRSS:\s+(\d+)/.exec(status)![1]) / 1024)
        const get = performance.now()
        await (await fetch(`${service.url}/v1/models`)).text()
        const post = performance.now()
        await (await fetch(`${service.url}/v1/model_registrations/LLM`, {body: '{"model": 1}', headers: {'content-type': 'application/json'}, method: 'POST'})).text()
        measured[index].firstGet.push(post - get)
        measured[index].firstPost.push(performance.now() - post)
      } finally {
        await service.stop()
      }
    }
  }

  for (const [index, root] of roots.entries()) {
    const {firstGet, firstPost, ready, rss} = measured[index]
    const {max, median, min} = summary(rss)
    console.log(`${root}: idle RSS ${median.toFixed(1)} MB (${min.toFixed(1)}–${max.toFixed(1)}), ready after ${show(ready, 'ms')}, first GET ${show(firstGet, 'ms')}, first POST with a body ${show(firstPost, 'ms')}`)
  }
}

const loads = [loadavg()[0]]
await compareCli(['list'])
await compareCli(['--version'])
await compareService()
loads.push(loadavg()[0])
console.log(`load average ${loads.map((load) => load.toFixed(2)).join(' -> ')}`)
