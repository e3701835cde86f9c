/**
 * The idle service's young generation is sized by its requests, not by its start: a real `service-local`, scraped
 * at `GET /metrics` (prom-client's heap-space gauges, read by a Prometheus text parser). Loading a few hundred
 * modules used to double V8's semi-spaces up to 16 MB (8 MB of RSS the idle service kept).
 */
import {expect} from 'chai'

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

  it('listens with the young generation V8 starts with, not one its start-up grew', async () => {
    const families = await scrapeMetrics(service.url)
    expect(sampleValue(families, 'nodejs_heap_space_size_total_bytes', {space: 'new'})).to.be.at.most(4 * 1024 ** 2)
  })
})
