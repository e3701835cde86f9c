/**
 * The idle service's young generation is sized by its requests, not by its start: a real `service-local`, scraped
 * at `GET /metrics` (prom-client's heap-space gauges, read by a Prometheus text parser). Loading a few hundred
 * modules used to double V8's semi-spaces up to 16 MB (8 MB of RSS the idle service kept). Its resident memory
 * before any request, read from /proc: 88 MB before TurboFan was held off while it starts and prom-client's
 * Pushgateway left unloaded, 78 MB since, 87 MB once the catalogue held 185 LLM families (432 KB of JSON) and the
 * Xinference, Ollama and reasoning routes came in, 90 MB with the Responses API, pictures, tool calls, on-demand
 * launches, usage and quotas and hub names; the bound leaves room for the machine, not for those to come back.
 */
import {expect} from 'chai'
import {readFile} from 'node:fs/promises'

import {sampleValue, scrapeMetrics} from '../helpers/prometheus.js'
import {type RunningService, startService} from '../helpers/service.js'

describe('idle service memory (service-local, GET /metrics)', () => {
  let service: RunningService

  before(async () => {
    service = await startService()
  })

  after(async () => {
    await service?.stop()
  })

  it('holds at most 94 MB resident while idle', async function () {
    if (process.platform !== 'linux') this.skip()
    const status = await readFile(`/proc/${service.process.pid}/status`, 'utf8')
    expect(Number(/VmRSS:\s+(\d+)/.exec(status)![1]) / 1024).to.be.at.most(94)
  })

  it('listens with the young generation V8 starts with, not one its start-up grew', async () => {
    const families = await scrapeMetrics(service.url)
    expect(sampleValue(families, 'nodejs_heap_space_size_total_bytes', {space: 'new'})).to.be.at.most(4 * 1024 ** 2)
  })
})
