/**
 * Keep-alive durations as Ollama writes them, and the on-demand owner's decisions against a supervisor that only
 * records what it is asked (the real one is driven end to end by test/e2e/on-demand.test.ts): a model held by a
 * request is never unloaded, whatever its keep-alive; first requests share one launch; a caller who may not start
 * models, or a model known to no launch, launches nothing; a client that will not wait gets 503 with Retry-After.
 */
import {expect} from 'chai'
import {join} from 'node:path'

import type {ModelStatus} from '../../src/protocol/models.js'

import {DesiredModels} from '../../src/cluster/desired-models.js'
import {OnDemand} from '../../src/cluster/on-demand.js'
import {ServiceError} from '../../src/kernel/errors.js'
import {keepAliveMs} from '../../src/kernel/keep-alive.js'
import {type ModelStateChanged, ServiceEvents, type UnloadReason} from '../../src/kernel/observability.js'
import {keepAlive} from '../../src/kernel/schema.js'
import {temporaryDirectory, until} from '../helpers/service.js'

const quiet = {debug() {}, error() {}, info() {}, warn() {}}

/** What OnDemand asks of the supervisor, recorded; each launch stays `launching` until the test says it is ready. */
class RecordingSupervisor {
  readonly launches: string[] = []
  readonly unloads: Array<[string, UnloadReason | undefined]> = []
  private readonly models = new Map<string, {status: ModelStatus; launched: Promise<void>; ready: () => void}>()

  constructor(private readonly events: ServiceEvents) {}

  state(uid: string) {
    const model = this.models.get(uid)
    return model && {launched: model.launched, status: model.status}
  }

  async launch(request: {model_uid?: string; model_name: string}, _options?: unknown) {
    const uid = request.model_uid ?? request.model_name
    this.launches.push(uid)
    let ready!: () => void
    const launched = new Promise<void>((resolve) => (ready = resolve))
    this.models.set(uid, {launched, ready, status: 'launching'})
    this.report(uid, 'launching', {launch: {...request, model_uid: uid}})
    return {model_uid: uid}
  }

  ready(uid: string): void {
    const model = this.models.get(uid)!
    model.status = 'ready'
    model.ready()
    this.report(uid, 'ready')
  }

  progress(uid: string) {
    return {downloaded_bytes: 0, error: null, files: [], hub: null, model_uid: uid, progress: 0.5, repo: 'tiny', stage: 'loading' as const, total_bytes: 0}
  }

  async terminate(uid: string, _lookup?: unknown, unload?: UnloadReason): Promise<void> {
    this.unloads.push([uid, unload])
    this.models.delete(uid)
    this.report(uid, 'terminated', {unload})
  }

  private report(uid: string, state: ModelStateChanged['state'], extra: Partial<ModelStateChanged> = {}): void {
    this.events.report('model', {modelName: 'tiny', modelType: 'LLM', state, uid, ...extra})
  }
}

describe('keep-alive durations', () => {
  it("reads Ollama's durations, seconds, forever and zero, and refuses anything else", () => {
    const cases: Array<[number | string, number | undefined]> = [
      ['5m', 300_000], ['1h30m', 5_400_000], ['90s', 90_000], ['250ms', 250], [90, 90_000], ['90', 90_000], [1.5, 1500],
      [0, 0], ['0s', 0], [-1, Number.POSITIVE_INFINITY], ['-1m', Number.POSITIVE_INFINITY],
      ['soon', undefined], ['5 m', undefined], ['1e3', undefined], ['', undefined], ['9'.repeat(40), undefined], [2 * 365 * 86_400, undefined],
    ]
    for (const [value, ms] of cases) expect(keepAliveMs(value), JSON.stringify(value)).to.equal(ms)
  })

  it('is refused by the schema with the field named and what it takes', () => {
    expect(keepAlive().parse('5m', 'keep_alive')).to.equal('5m')
    for (const value of ['later', {minutes: 5}, true])
      expect(() => keepAlive().parse(value, 'keep_alive')).to.throw(ServiceError, /^`keep_alive` .*a duration such as "5m"/)
  })
})

describe('models on demand (OnDemand)', () => {
  let events: ServiceEvents
  let supervisor: RecordingSupervisor
  let onDemand: OnDemand
  const use = {mayStart: true, signal: new AbortController().signal, wait: true}

  /** A model that ran once with this launch, then was unloaded: known, not running. */
  async function knownModel(uid: string, launch: Record<string, unknown> = {}): Promise<void> {
    await supervisor.launch({model_name: 'tiny', model_uid: uid, ...launch})
    supervisor.ready(uid)
    await supervisor.terminate(uid, undefined, 'idle')
    supervisor.launches.length = 0
    supervisor.unloads.length = 0
  }

  beforeEach(async () => {
    events = new ServiceEvents()
    const desired = await DesiredModels.open(events, {file: join(await temporaryDirectory(), 'desired-models.json'), log: quiet})
    supervisor = new RecordingSupervisor(events)
    let clock = 0
    onDemand = new OnDemand({desired, events, keepAliveMs: Number.POSITIVE_INFINITY, loadOnDemand: false, log: quiet, now: () => (clock += 1000), supervisor: supervisor as never, waitMs: 60_000})
  })

  it('never unloads a model a request holds, even past a keep-alive of 0, and unloads it once released', async () => {
    await knownModel('held', {keep_alive: 0})
    const first = onDemand.acquire('held', use)
    await until(async () => (supervisor.launches.length === 1 ? true : undefined), 'the on-demand launch')
    supervisor.ready('held')
    const release = await first
    // Ready with a keep-alive of 0 while held: a relaunch's `ready` arrives the same way.
    supervisor.ready('held')
    for (let turn = 0; turn < 20; turn++) await new Promise((resolve) => setImmediate(resolve))
    expect(supervisor.unloads).to.deep.equal([])
    release()
    await until(async () => (supervisor.unloads.length === 1 ? true : undefined), 'the unload')
    expect(supervisor.unloads).to.deep.equal([['held', 'keep_alive_0']])
  })

  it('launches once for concurrent first requests, and they all wait for it', async () => {
    await knownModel('shared')
    const waiting = [onDemand.acquire('shared', use), onDemand.acquire('shared', use), onDemand.acquire('shared', {...use, keepAliveMs: -1})]
    await until(async () => (supervisor.launches.length > 0 ? true : undefined), 'the launch')
    supervisor.ready('shared')
    const releases = await Promise.all(waiting)
    expect(supervisor.launches).to.deep.equal(['shared'])
    for (const release of releases) release()
  })

  it('launches nothing for a caller who may not start models, nor for a name no launch knows', async () => {
    await knownModel('guarded')
    ;(await onDemand.acquire('guarded', {...use, mayStart: false}))()
    ;(await onDemand.acquire('made-up', use))()
    expect(supervisor.launches).to.deep.equal([])
  })

  it('answers a client that will not wait 503 with Retry-After and where the launch is, and launches meanwhile', async () => {
    await knownModel('slow')
    const refused = await onDemand.acquire('slow', {...use, wait: false}).catch((error: ServiceError) => error)
    expect(refused).to.be.instanceOf(ServiceError)
    expect(refused).to.include({code: 'model_loading', retryAfterSeconds: 5, status: 503})
    expect((refused as ServiceError).message).to.equal('model slow is loading on demand (loading, 50%); retry in 5 s, or follow GET /v1/models/slow/progress.')
    expect(supervisor.launches).to.deep.equal(['slow'])
  })

  it('evicts for room the least recently used idle model that has a keep-alive, never one in use or kept forever', async () => {
    /** Brings a known model back with a request, which it answers; answers that request's release. */
    async function used(uid: string): Promise<() => void> {
      const holding = onDemand.acquire(uid, use)
      await until(async () => (supervisor.state(uid) ? true : undefined), `${uid} to be launched`)
      supervisor.ready(uid)
      return holding
    }

    for (const [uid, launch] of [['recent', {keep_alive: '1h'}], ['older', {keep_alive: '1h'}], ['forever', {}], ['busy', {keep_alive: '1h'}]] as const) await knownModel(uid, launch)
    ;(await used('older'))()
    ;(await used('recent'))()
    ;(await used('forever'))()
    const busy = await used('busy')
    expect(onDemand.evictable()).to.equal(true)
    expect(await onDemand.evict('new')).to.equal(true)
    expect(await onDemand.evict('new')).to.equal(true)
    expect(await onDemand.evict('new')).to.equal(false)
    expect(supervisor.unloads).to.deep.equal([['older', 'evicted'], ['recent', 'evicted']])
    busy()
  })
})
