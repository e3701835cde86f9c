/**
 * The load test, against a real `service-local` and the catalogue's tiny-random-llm: 64 streams from the
 * official openai client, more than the model's sequences, so requests queue. After a warm-up under the same load,
 * 60 s of it, half-way through which the model process is killed with `kill -9`. The service keeps answering its other
 * routes, self-healing brings the model back, no request hangs (each ends with a success or a clear error within a
 * bound), and the service's memory grows less than 10 % over the 60 s. It asserts outcomes, not speeds; the numbers it
 * measured are printed for docs/observability.md ("Under load").
 */
import {expect} from 'chai'
import {readFile} from 'node:fs/promises'
import OpenAI from 'openai'

import {sampleValue, scrapeMetrics} from '../helpers/prometheus.js'
import {callApi, type RunningService, startService, until} from '../helpers/service.js'

const STREAMS = 64
const DURATION_MS = 60_000
/**
 * Under this load V8 lets the service's old generation grow to about four times its live heap (~30 MB) before it
 * collects it, and that limit settles over a few major collections: until then RSS climbs to its working size without
 * any leak (the heap after each major collection stays the same), so memory is compared from then on. The warm-up
 * lasts until RSS, read at each of the service's major collections (as its own `nodejs_gc_duration_seconds` counts
 * them), grew less than WARM_UP_SETTLED from one to the next, within a time limit.
 */
const WARM_UP_SETTLED = 0.03
/**
 * Two collections a little apart can agree while the limit still climbs (seen: 265 and 268 MiB at 13 and 22 s, then
 * 324 at 40 s). The limit grows with the work done, not with time: RSS reached its working size (324–331 MiB) after
 * 9,000 to 11,000 requests in every run recorded, and a warm-up that ended after 60 s but 7,340 requests, on a busy
 * machine, read 280 MiB and then 331 (+18 %). So the warm-up also lasts this many requests.
 */
const WARM_UP_MIN_REQUESTS = 10_000
const WARM_UP_LIMIT_MS = 180_000
/** No request may take longer: it would have hung. Beyond SERVICE_RESTART_WAIT (30 s) and a queue of 64 short streams. */
const REQUEST_BOUND_MS = 45_000
const MODEL = 'tiny-random-llm'

/** Resident memory of a process, from /proc (Linux, where the tests run). */
async function residentBytes(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8')
  return Number(/^VmRSS:\s+(\d+) kB$/m.exec(status)![1]) * 1024
}

type Outcome = {kind: 'success'} | {kind: 'error'; status?: number; message: string} | {kind: 'hung'}

describe('64 streams for 60 s with the model process killed in the middle (service-local, tiny-random-llm)', function () {
  this.timeout(400_000)
  let service: RunningService
  const api = (method: string, path: string, body?: unknown) => callApi(service, method, path, body)

  before(async () => {
    service = await startService({env: {SERVICE_RESTART_ATTEMPTS: '5'}})
    const launched = await api('POST', '/v1/models', {model_engine: 'llama.cpp', model_name: MODEL, n_ctx: 256, n_parallel: 4, n_threads: 1})
    expect(launched.status, JSON.stringify(launched.body)).to.equal(200)
  })

  after(async () => service?.stop())

  it('keeps serving, brings the model back, ends every request with a success or a clear error, and holds its memory', async () => {
    const openai = new OpenAI({apiKey: 'none', baseURL: `${service.url}/v1`, maxRetries: 0, timeout: REQUEST_BOUND_MS})
    let started = Date.now()
    const elapsed = () => Date.now() - started
    const outcomes: Outcome[] = []
    let warmingUp = true
    /** Whether the load goes on: through the warm-up, then for DURATION_MS. */
    const loading = () => (warmingUp ? elapsed() < WARM_UP_LIMIT_MS : elapsed() < DURATION_MS)

    async function stream(): Promise<Outcome> {
      try {
        const chunks = await openai.chat.completions.create({max_tokens: 24, messages: [{content: 'Tell me a story.', role: 'user'}], model: MODEL, stream: true}, {signal: AbortSignal.timeout(REQUEST_BOUND_MS)})
        let finish: string | null = null
        for await (const chunk of chunks) finish = chunk.choices[0]?.finish_reason ?? finish
        return finish ? {kind: 'success'} : {kind: 'error', message: 'the stream ended without a finish reason'}
      } catch (error) {
        if (error instanceof OpenAI.APIConnectionTimeoutError || (error as Error).name === 'TimeoutError' || error instanceof OpenAI.APIUserAbortError) return {kind: 'hung'}
        return {kind: 'error', message: (error as Error).message, status: (error as {status?: number}).status}
      }
    }

    const client = async () => {
      while (loading()) outcomes.push(await stream())
    }

    // The other routes, answered all along: the model list and the metrics, each within the bound.
    const probes = {failed: [] as string[], answered: 0, maxWaiting: 0}
    const probing = (async () => {
      while (loading()) {
        const models = await api('GET', '/v1/models').catch((error: Error) => ({body: error.message, status: 0}))
        if (models.status === 200) probes.answered++
        else probes.failed.push(`GET /v1/models: ${models.status}`)
        const families = await scrapeMetrics(service.url).catch(() => undefined)
        if (!families) probes.failed.push('GET /metrics')
        // The series appears with the engine's first report of its sequences.
        else if (families.get('vllm:num_requests_waiting')?.metrics.length)
          probes.maxWaiting = Math.max(probes.maxWaiting, sampleValue(families, 'vllm:num_requests_waiting', {model_name: MODEL}))
        await new Promise((resolve) => setTimeout(resolve, 500))
      }
    })()

    const majorGcs = async () => {
      const gcs = (await scrapeMetrics(service.url)).get('nodejs_gc_duration_seconds_count')?.metrics ?? []
      return Number(gcs.find((sample) => sample.labels?.kind === 'major')?.value ?? 0)
    }

    const clients = Array.from({length: STREAMS}, () => client())
    // RSS at each major collection under the load, the first one's excluded (the load had barely begun).
    const atCollections: number[] = []
    let collections = await majorGcs()
    const settled = () => outcomes.length >= WARM_UP_MIN_REQUESTS && atCollections.length >= 3 && atCollections.at(-1)! / atCollections.at(-2)! - 1 < WARM_UP_SETTLED
    while (!settled() && elapsed() < WARM_UP_LIMIT_MS) {
      await new Promise((resolve) => setTimeout(resolve, 1000))
      const now = await majorGcs()
      if (now > collections) atCollections.push(await residentBytes(service.process.pid!))
      collections = now
    }
    const warmUpMs = elapsed()
    warmingUp = false
    started = Date.now()
    const warm = await residentBytes(service.process.pid!)
    const warmedUp = outcomes.length

    await new Promise((resolve) => setTimeout(resolve, DURATION_MS / 2))
    const {pid} = (await api('GET', `/v1/models/${MODEL}`)).body
    const killedAt = Date.now()
    process.kill(pid, 'SIGKILL')
    const relaunched = await until(async () => {
      const {body} = await api('GET', `/v1/models/${MODEL}`)
      return body.status === 'ready' && body.pid !== pid ? body : undefined
    }, 'self-healing to bring the model back', 30_000)
    const relaunchMs = Date.now() - killedAt

    await Promise.all([...clients, probing])
    const after = await residentBytes(service.process.pid!)

    const count = (kind: Outcome['kind']) => outcomes.filter((outcome) => outcome.kind === kind).length
    const errors = outcomes.filter((outcome): outcome is Extract<Outcome, {kind: 'error'}> => outcome.kind === 'error')
    console.log(
      `      load: ${outcomes.length} requests (${warmedUp} in a ${(warmUpMs / 1000).toFixed(0)} s warm-up), ${count('success')} succeeded, ${errors.length} errored, ${count('hung')} hung; relaunch ${relaunchMs} ms;` +
        ` service RSS ${(warm / 2 ** 20).toFixed(1)} MiB after warm-up, ${(after / 2 ** 20).toFixed(1)} MiB at the end (${(((after - warm) / warm) * 100).toFixed(1)} %);` +
        ` at most ${probes.maxWaiting} waiting; ${probes.answered} model lists answered`,
    )
    for (const message of new Set(errors.map((error) => `${error.status}: ${error.message}`))) console.log(`      error: ${message}`)

    expect(count('hung'), 'no request may hang').to.equal(0)
    expect(count('success')).to.be.greaterThan(STREAMS)
    expect(probes.failed, 'the other routes keep answering').to.deep.equal([])
    expect(probes.maxWaiting, 'requests queue for the sequences').to.be.greaterThan(0)
    expect(relaunched).to.include({restarts: 1, status: 'ready'})
    expect(relaunched.last_error).to.contain('killed by SIGKILL')
    // The requests in flight when the process died get its error, saying what follows; none fails any other way.
    const modelLog = await readFile(`${service.home}/logs/models/${MODEL}.log`, 'utf8')
    const serviceErrors = [...service.output().split('\n'), ...modelLog.split('\n')].filter((line) => / error /.test(line) && !line.includes('SIGKILL'))
    for (const error of errors) expect(error.message, `a clear error: ${error.message}; the service logged: ${serviceErrors.join('\n')}`).to.match(/killed by SIGKILL|being relaunched/)
    expect(errors.length, 'only the requests in flight, at most, fail').to.be.at.most(STREAMS)
    expect((after - warm) / warm, 'memory growth after warm-up').to.be.lessThan(0.1)
    const reply = await openai.chat.completions.create({max_tokens: 3, messages: [{content: 'Hi', role: 'user'}], model: MODEL})
    expect(reply.choices[0].message.role).to.equal('assistant')
  })
})
