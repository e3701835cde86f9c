import {expect} from 'chai'
import {join} from 'node:path'

import type {LaunchOptions, WorkerApi} from '../../src/cluster/worker.js'
import type {InstanceLaunch, InstanceSummary, LaunchStep, WorkerMemoryEstimate, WorkerStatus} from '../../src/protocol/worker.js'

import {Supervisor, type SupervisorOptions} from '../../src/cluster/supervisor.js'
import {ServiceError} from '../../src/kernel/errors.js'
import {createKernelApi, Kernel} from '../../src/kernel/kernel.js'
import {type ModelStateChanged, ServiceEvents} from '../../src/kernel/observability.js'
import {ModelRegistry} from '../../src/kernel/registry.js'
import {temporaryDirectory, until} from '../helpers/service.js'

const quiet = {debug() {}, error() {}, info() {}, warn() {}}
const halfDownloaded: LaunchStep = {download: {downloadedBytes: 50, files: [{downloadedBytes: 50, name: 'demo-q4_0.gguf', totalBytes: 100}], hub: 'huggingface', repo: 'org/demo', totalBytes: 100}, stage: 'downloading'}

/**
 * A worker whose launches succeed or fail on demand, or wait for the test (`pause`) after reporting a
 * step (half of a download unless told); records what it was asked to do.
 */
class FakeWorker implements WorkerApi {
  readonly id = 'fake'
  launches: InstanceLaunch[] = []
  failNext?: ServiceError
  /** What each instance needs, as the engine's estimator would say; none: the worker cannot estimate. */
  estimatedBytes?: number
  running = new Set<string>()
  disposed = false
  private paused?: {continue: () => void; options: LaunchOptions; step: LaunchStep; ignoringAbort: boolean}
  private waiting?: {continue: () => void; options: LaunchOptions; step: LaunchStep}

  /**
   * The next launch reports `step`, then waits for `resume()` (or its cancellation, unless `ignoringAbort`: a
   * load that finishes however late the cancel comes).
   */
  pause(step = halfDownloaded, {ignoringAbort = false} = {}) {
    this.paused = {continue() {}, ignoringAbort, options: {}, step}
  }

  resume(loadFractions: number[] = [0.5, 1]) {
    const paused = this.waiting!
    for (const fraction of loadFractions) paused.options.onProgress?.({fraction, stage: 'loading'})
    paused.continue()
  }

  async launch(launch: InstanceLaunch, options: LaunchOptions = {}): Promise<InstanceSummary> {
    this.launches.push(launch)
    if (this.failNext) throw this.failNext
    if (this.paused) {
      const paused = this.paused
      this.waiting = paused
      paused.options = options
      options.onProgress?.(paused.step)
      this.paused = undefined
      await new Promise<void>((resolve, reject) => {
        paused.continue = resolve
        if (!paused.ignoringAbort) options.signal?.addEventListener('abort', () => reject(new ServiceError(499, 'request_aborted', 'cancelled')), {once: true})
      })
    }

    this.running.add(launch.load.modelUid)
    return {info: {abilities: ['generate'], contextLength: 512}, pid: 1234, state: 'ready', uid: launch.load.modelUid}
  }

  async cachedModels() {
    return []
  }

  async removeCachedModel(): Promise<string[]> {
    return []
  }

  async estimateMemory(): Promise<WorkerMemoryEstimate> {
    if (this.estimatedBytes === undefined) throw new ServiceError(400, 'unsupported', 'not here')
    return {context_length: 512, kv_cache_bytes: 0, overhead_bytes: 0, source: 'cache', total_bytes: this.estimatedBytes, weights_bytes: this.estimatedBytes}
  }

  async terminate(uid: string) {
    this.running.delete(uid)
  }

  async *invoke() {
    yield {type: 'text', text: 'hi'}
  }

  instances(): InstanceSummary[] {
    return []
  }

  status(): WorkerStatus {
    // 1 GiB, less what its running instances take as estimated.
    const free = Math.max(0, 2 ** 30 - this.running.size * (this.estimatedBytes ?? 0))
    return {address: null, id: this.id, last_seen: 0, resources: {cpu_count: 1, gpus: [], memory_free_bytes: free, memory_total_bytes: 2 ** 30}, state: 'ready', version: '0.0.0'}
  }

  async dispose() {
    this.disposed = true
  }
}

async function setup(events?: ServiceEvents, {estimator = false, makeRoom}: {estimator?: boolean; makeRoom?: SupervisorOptions['makeRoom']} = {}) {
  const api = createKernelApi('0.0.0', quiet)
  const kernel = Kernel.fromContributions(api, [
    {
      contribution: {
        catalogue: [{families: [{model_ability: ['chat', 'generate'], model_name: 'demo', model_specs: [{model_format: 'ggufv2', model_size_in_billions: 1, model_src: {huggingface: {model_file_name_template: 'demo-{quantization}.gguf', model_id: 'org/demo', quantizations: ['q4_0']}}}]}], modelType: 'LLM'}],
        engines: [{formats: ['ggufv2'], hostModule: '/x.js', ...(estimator ? {estimatorModule: '/estimator.js'} : {}), modelTypes: ['LLM'], name: 'llama.cpp', parameters: {n_ctx: {description: '', minimum: 16, type: 'integer'}, use_mmap: {description: '', type: 'boolean'}}}],
        modelTypes: [{defaultAbilities: ['chat'], description: 'LLM', name: 'LLM'}],
      },
      plugin: 'core',
    },
  ])
  const registry = new ModelRegistry(kernel, join(await temporaryDirectory('supervisor-'), 'registrations'), quiet)
  const worker = new FakeWorker()
  const supervisor = new Supervisor({events, kernel, log: quiet, makeRoom, now: () => 1000, registry, workers: [worker]})
  return {supervisor, worker}
}

describe('supervisor', () => {
  it('launches with converted engine parameters and the engine-reported abilities', async () => {
    const {supervisor, worker} = await setup()
    expect(await supervisor.launch({model_engine: 'llama.cpp', model_name: 'demo', n_ctx: '512', use_mmap: 'false'})).to.deep.equal({model_uid: 'demo'})
    expect(worker.launches[0].load.parameters).to.deep.equal({n_ctx: 512, use_mmap: false})
    expect(worker.launches[0].load.spec).to.include({model_id: 'org/demo', quantization: 'q4_0'})
    expect(supervisor.describeModel('demo')).to.include({context_length: 512, created: 1000, pid: 1234, status: 'ready'})
    expect(supervisor.get('demo').abilities).to.deep.equal(['generate'])
  })

  it('leaves no uid behind when a launch fails, and keeps the cause', async () => {
    const {supervisor, worker} = await setup()
    worker.failNext = new ServiceError(500, 'launch_failed', 'out of memory')
    const error = await supervisor.launch({model_engine: 'llama.cpp', model_name: 'demo'}).catch((e) => e)
    expect(error.message).to.equal('failed to launch demo: out of memory')
    expect(supervisor.describeAll()).to.deep.equal([])
  })

  it('shows a crash on the model and answers its requests with the cause', async () => {
    const {supervisor} = await setup()
    await supervisor.launch({model_engine: 'llama.cpp', model_name: 'demo'})
    supervisor.markCrashed('demo', new ServiceError(503, 'model_crashed', 'process exited with code 134'))
    expect(supervisor.describeModel('demo')).to.include({error: 'process exited with code 134; it stays failed, as self-healing is off (SERVICE_RESTART_ATTEMPTS=0): terminate it and launch it again.', status: 'error'})
    expect(() => supervisor.get('demo').invoke('chat', {}, new AbortController().signal)).to.throw('process exited with code 134')
    await supervisor.terminate('demo')
    expect(supervisor.describeAll()).to.deep.equal([])
  })

  it('answers at once without wait_ready and reports progress that only moves forward, reaching 1 when ready', async () => {
    const {supervisor, worker} = await setup()
    worker.pause()
    expect(await supervisor.launch({model_engine: 'llama.cpp', model_name: 'demo'}, {waitReady: false})).to.deep.equal({model_uid: 'demo'})
    expect(supervisor.progress('demo')).to.deep.include({downloaded_bytes: 50, hub: 'huggingface', progress: 0.45, repo: 'org/demo', stage: 'downloading', total_bytes: 100})
    expect(supervisor.describeModel('demo')).to.include({progress: 0.45, stage: 'downloading', status: 'launching'})
    worker.resume([0.5, 0.2, 1])
    await new Promise((resolve) => setImmediate(resolve))
    expect(supervisor.progress('demo')).to.deep.include({error: null, progress: 1, stage: 'ready'})
  })

  it('reports weights being made on the worker as the generating stage, then loading', async () => {
    const {supervisor, worker} = await setup()
    worker.pause({stage: 'generating'})
    await supervisor.launch({model_engine: 'llama.cpp', model_name: 'demo'}, {waitReady: false})
    expect(supervisor.progress('demo')).to.deep.include({downloaded_bytes: 0, progress: 0, stage: 'generating', total_bytes: 0})
    expect(supervisor.describeModel('demo')).to.include({stage: 'generating', status: 'launching'})
    worker.resume([0.5])
    expect(supervisor.progress('demo')).to.deep.include({progress: 0.5, stage: 'loading'})
    await new Promise((resolve) => setImmediate(resolve))
    expect(supervisor.progress('demo')).to.deep.include({progress: 1, stage: 'ready'})
  })

  it('cancels a launch in progress, keeps why for the progress route, and frees the uid', async () => {
    const {supervisor, worker} = await setup()
    worker.pause()
    const waiting = supervisor.launch({model_engine: 'llama.cpp', model_name: 'demo'}).catch((e) => e)
    await supervisor.cancel('demo')
    expect(await waiting).to.include({code: 'request_aborted', message: 'the launch of demo was cancelled.', status: 499})
    expect(supervisor.progress('demo')).to.deep.include({error: {code: 'request_aborted', message: 'the launch of demo was cancelled.', status: 499}, stage: 'cancelled'})
    expect(supervisor.list()).to.deep.equal([])
    expect(() => supervisor.get('demo')).to.throw('model "demo" is not running. Its last launch was cancelled')
    const again = await supervisor.cancel('demo').catch((e) => e)
    expect(again).to.include({status: 409})
    expect(await supervisor.launch({model_engine: 'llama.cpp', model_name: 'demo'})).to.deep.equal({model_uid: 'demo'})
    expect(supervisor.progress('demo').stage).to.equal('ready')
    expect(await supervisor.cancel('demo').catch((e) => e)).to.include({status: 409})
  })

  it('cancels a launch when its waiting caller goes away, and when it is terminated', async () => {
    const {supervisor, worker} = await setup()
    worker.pause()
    const caller = new AbortController()
    const waiting = supervisor.launch({model_engine: 'llama.cpp', model_name: 'demo'}, {signal: caller.signal}).catch((e) => e)
    caller.abort()
    expect(await waiting).to.include({status: 499})
    worker.pause()
    await supervisor.launch({model_engine: 'llama.cpp', model_name: 'demo', model_uid: 'other'}, {waitReady: false})
    await supervisor.terminate('other')
    expect(supervisor.progress('other').stage).to.equal('cancelled')
  })

  it("reports a crashed model's progress as error with the reason, as its description does", async () => {
    const {supervisor} = await setup()
    await supervisor.launch({model_engine: 'llama.cpp', model_name: 'demo'})
    supervisor.markCrashed('demo', new ServiceError(503, 'model_crashed', 'process was killed by SIGKILL'))
    expect(supervisor.progress('demo')).to.deep.include({error: {code: 'model_crashed', message: 'process was killed by SIGKILL; it stays failed, as self-healing is off (SERVICE_RESTART_ATTEMPTS=0): terminate it and launch it again.', status: 503}, stage: 'error'})
  })

  it('a terminate of a uid whose launch is still arriving waits for it and cancels it', async () => {
    const {supervisor, worker} = await setup()
    const arrived = supervisor.launchArriving()
    const terminating = supervisor.terminate('demo')
    worker.pause()
    const launching = supervisor.launch({model_engine: 'llama.cpp', model_name: 'demo'}).catch((e) => e)
    arrived()
    await terminating
    expect(await launching).to.include({status: 499})
    expect(supervisor.progress('demo').stage).to.equal('cancelled')
    expect(worker.running.size).to.equal(0)
    expect(await supervisor.terminate('other').catch((e) => e)).to.include({status: 404})
  })

  it('a terminate that comes as the load finishes ends the model it loaded', async () => {
    const {supervisor, worker} = await setup()
    worker.pause(halfDownloaded, {ignoringAbort: true})
    const launching = supervisor.launch({model_engine: 'llama.cpp', model_name: 'demo'}).catch((e) => e)
    const terminating = supervisor.terminate('demo')
    worker.resume()
    await terminating
    expect(await launching).to.include({status: 499})
    expect(worker.running.size).to.equal(0)
    expect(supervisor.list()).to.deep.equal([])
  })

  it('dispose cancels the launches in progress, then the workers, and refuses launches after it', async () => {
    const {supervisor, worker} = await setup()
    worker.pause()
    await supervisor.launch({model_engine: 'llama.cpp', model_name: 'demo'}, {waitReady: false})
    await supervisor.dispose()
    expect(supervisor.progress('demo')).to.deep.include({error: {code: 'shutting_down', message: 'the launch of demo was cancelled: the service is shutting down.', status: 503}, stage: 'cancelled'})
    expect(worker.disposed).to.equal(true)
    expect(await supervisor.launch({model_engine: 'llama.cpp', model_name: 'demo'}).catch((e) => e)).to.include({code: 'shutting_down', status: 503})
    expect(worker.launches).to.have.length(1)
  })

  it("refuses a launch whose replicas' summed memory its only worker cannot hold, before any process starts", async () => {
    const {supervisor, worker} = await setup(undefined, {estimator: true})
    // Half the fake worker's 1 GiB free each: two fit, the third does not.
    worker.estimatedBytes = 2 ** 29
    const error = await supervisor.launch({model_engine: 'llama.cpp', model_name: 'demo', replica: 3}).catch((e) => e)
    expect(error).to.include({param: 'replica', status: 503})
    expect(error.message).to.match(/^replica 3 of demo needs 1\.5 GiB \(0\.5 GiB each\), but the workers have room for 2: fake has 1\.0 GiB free, room for 2\./)
    expect(worker.launches).to.deep.equal([])
    expect(supervisor.describeAll()).to.deep.equal([])
    await supervisor.launch({model_engine: 'llama.cpp', model_name: 'demo', replica: 2})
    expect(worker.launches.map((launch) => launch.load.modelUid)).to.deep.equal(['demo-rep0', 'demo-rep1'])
  })

  it('asks for room when a launch does not fit, places it once an idle model is unloaded, and refuses it with what the worker has when none can be', async () => {
    const idle: string[] = []
    const asked: string[] = []
    const makeRoom = {
      async evict(uid: string) {
        asked.push(uid)
        const victim = idle.shift()
        if (victim) await supervisor.terminate(victim, undefined, 'evicted')
        return victim !== undefined
      },
      evictable: () => idle.length > 0,
    }
    const {supervisor, worker} = await setup(undefined, {estimator: true, makeRoom})
    worker.estimatedBytes = 0.4 * 2 ** 30
    for (const uid of ['first', 'second']) await supervisor.launch({model_engine: 'llama.cpp', model_name: 'demo', model_uid: uid})
    idle.push('first')
    await supervisor.launch({model_engine: 'llama.cpp', model_name: 'demo', model_uid: 'third'})
    expect(asked).to.deep.equal(['third'])
    expect(supervisor.describeAll().map((model) => model.id)).to.deep.equal(['second', 'third'])
    idle.push('second')
    const error = await supervisor.launch({model_engine: 'llama.cpp', model_name: 'demo', model_uid: 'fourth', replica: 2}).catch((e) => e)
    expect(asked).to.deep.equal(['third', 'fourth', 'fourth'])
    expect(error).to.include({code: 'overloaded', status: 503})
    expect(error.message).to.match(/^replica 2 of fourth needs 0\.8 GiB \(0\.4 GiB each\), but the workers have room for 1: fake has 0\.6 GiB free, room for 1\./)
    expect(supervisor.describeAll().map((model) => model.id)).to.deep.equal(['third'])
  })

  it('runs replicas as <uid>-rep<i> and refuses unknown uids with the running ones listed', async () => {
    const {supervisor, worker} = await setup()
    await supervisor.launch({model_engine: 'llama.cpp', model_name: 'demo', replica: 2})
    expect([...worker.running]).to.deep.equal(['demo-rep0', 'demo-rep1'])
    expect(supervisor.describeModel('demo')).to.include({replica: 2, worker: 'fake, fake'})
    await supervisor.terminate('demo')
    expect(worker.running.size).to.equal(0)
    await supervisor.launch({model_engine: 'llama.cpp', model_name: 'demo'})
    expect(() => supervisor.get('other')).to.throw('model "other" is not running. Running models: demo.')
    expect(() => supervisor.get('other', {listRunning: false})).to.throw(/^model "other" is not running\.$/)
    expect(await supervisor.terminate('other', {listRunning: false}).catch((error) => error)).to.include({code: 'model_not_found', message: 'model "other" is not running.', status: 404})
  })

  it('reports each model state change: a crash, a cancelled launch, a lost worker and its models coming back', async () => {
    const events = new ServiceEvents()
    const seen: ModelStateChanged[] = []
    events.on('model', (event) => seen.push(event))
    const {supervisor, worker} = await setup(events)
    await supervisor.launch({model_engine: 'llama.cpp', model_name: 'demo'})
    supervisor.markCrashed('demo', new ServiceError(503, 'model_crashed', 'process exited with code 134'))
    await supervisor.terminate('demo')
    worker.pause()
    const cancelled = supervisor.launch({model_engine: 'llama.cpp', model_name: 'demo', model_uid: 'gone'}).catch(() => {})
    await supervisor.cancel('gone')
    await cancelled
    await supervisor.launch({model_engine: 'llama.cpp', model_name: 'demo', model_uid: 'kept'})
    supervisor.loseWorker('fake', 'no heartbeat for 10 s')
    supervisor.addWorker(worker, [{info: {}, launch: worker.launches.at(-1), pid: 1234, state: 'ready', uid: 'kept'}])
    expect(seen.map(({reason, state, uid}) => [uid, state, reason])).to.deep.equal([
      ['demo', 'launching', undefined],
      ['demo', 'ready', undefined],
      ['demo', 'error', 'process exited with code 134; it stays failed, as self-healing is off (SERVICE_RESTART_ATTEMPTS=0): terminate it and launch it again.'],
      ['demo', 'terminated', undefined],
      ['gone', 'launching', undefined],
      ['gone', 'terminated', 'the launch of gone was cancelled.'],
      ['kept', 'launching', undefined],
      ['kept', 'ready', undefined],
      ['kept', 'error', 'its worker fake was lost: no heartbeat for 10 s'],
      ['kept', 'ready', undefined],
    ])
    expect(seen[0]).to.include({modelName: 'demo', modelType: 'LLM'})
  })

  it("relaunches a lost worker's models on it when it rejoins without them, and not a model terminated while it was away", async () => {
    const events = new ServiceEvents()
    const seen: ModelStateChanged[] = []
    events.on('model', (event) => seen.push(event))
    const {supervisor, worker} = await setup(events)
    await supervisor.launch({model_engine: 'llama.cpp', model_name: 'demo', model_uid: 'back'})
    await supervisor.launch({model_engine: 'llama.cpp', model_name: 'demo', model_uid: 'dropped'})
    supervisor.loseWorker('fake', 'no heartbeat for 10 s')
    await supervisor.terminate('dropped')
    worker.running.clear()
    supervisor.addWorker(worker, [])
    await until(async () => (worker.running.has('back') && supervisor.describeAll().some((model) => model.id === 'back') ? true : undefined), 'back to be relaunched')
    expect(worker.launches.map((launch) => launch.load.modelUid)).to.deep.equal(['back', 'dropped', 'back'])
    expect(supervisor.describeModel('back')).to.include({status: 'ready'})
    expect(() => supervisor.describeModel('dropped')).to.throw(/not running/)
    expect(seen.map(({state, uid}) => `${uid} ${state}`).slice(4)).to.deep.equal(['back error', 'dropped error', 'dropped terminated', 'back ready'])
  })
})

