/**
 * The relaunch of a crashed model, with a worker that answers on demand and an injected backoff wait: the states it
 * reports, the attempts and the reason it keeps, giving up after the limit, and a stop during the backoff.
 */
import {expect} from 'chai'

import type {InstanceRecord} from '../../src/cluster/model-table.js'
import type {WorkerApi} from '../../src/cluster/worker.js'
import type {InstanceLaunch} from '../../src/protocol/worker.js'

import {modelHandle, ModelTable} from '../../src/cluster/model-table.js'
import {DEFAULT_RESTART_POLICY} from '../../src/cluster/restart-policy.js'
import {ModelHealer, replicasHoldingGpus} from '../../src/cluster/self-healing.js'
import {ServiceError} from '../../src/kernel/errors.js'

const quiet = {debug() {}, error() {}, info() {}, warn() {}}
const crash = new ServiceError(503, 'model_crashed', 'model demo was killed by SIGKILL')

describe('self-healing (ModelHealer)', () => {
  let waits: number[]
  let states: string[]
  let launches: InstanceLaunch[]
  let terminated: string[]
  let failLaunch: Error | undefined
  /** The backoff lasts until it is aborted. */
  let holdBackoff: boolean
  let record: InstanceRecord
  let healer: ModelHealer
  /** Requests fail, as from a server whose engine dies at its first request. */
  let failRequests: boolean
  let clock: number

  beforeEach(() => {
    waits = []
    states = []
    launches = []
    terminated = []
    failLaunch = undefined
    holdBackoff = false
    failRequests = false
    clock = 0
    const worker = {
      id: 'local',
      async *invoke() {
        if (failRequests) throw new ServiceError(502, 'internal_error', "model demo's program failed the request: fetch failed")
        yield {text: 'hello'}
      },
      async launch(launch: InstanceLaunch) {
        launches.push(launch)
        if (failLaunch) throw failLaunch
        return {info: {}, pid: 2000 + launches.length, state: 'ready', uid: launch.load.modelUid}
      },
      async terminate(uid: string) {
        terminated.push(uid)
      },
    } as unknown as WorkerApi
    const launch = {engine: 'llama.cpp', load: {modelUid: 'demo'}} as InstanceLaunch
    record = {error: crash, family: {}, info: {}, next: 0, spec: {}, progress: {stage: 'error'}, replicas: [{launch, pid: 1000, uid: 'demo', worker}], status: 'error', uid: 'demo'} as unknown as InstanceRecord
    const wait = async (ms: number, signal: AbortSignal) => {
      waits.push(ms)
      if (holdBackoff) await new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason), {once: true}))
    }

    healer = new ModelHealer({changed: (_, state, reason) => states.push(reason ? `${state}: ${reason}` : state), log: quiet, now: () => clock, policy: {...DEFAULT_RESTART_POLICY, attempts: 3, waitMs: 1000}, wait})
  })

  it('relaunches the crashed process on its worker after the backoff, and the model answers again', async () => {
    healer.crashed(record, crash)
    expect(record.status).to.equal('restarting')
    await record.healing!.settled
    expect(waits).to.deep.equal([1000])
    expect(terminated, 'the crashed process leaves the worker first').to.deep.equal(['demo'])
    expect(launches.map((launch) => launch.load.modelUid)).to.deep.equal(['demo'])
    expect(record).to.deep.include({error: undefined, status: 'ready'})
    expect(record.replicas[0].pid).to.equal(2001)
    expect(record.healing).to.include({lastError: crash.message, restarts: 1})
    expect(states).to.deep.equal([`restarting: ${crash.message}`, 'ready'])
  })

  it('says what follows a crash: the relaunch with its attempt and wait, or why the model stays failed and what to do', () => {
    expect(healer.outlook(record)).to.equal('the service relaunches it in 1 s (attempt 1 of 3 in a row), and requests wait for it up to 1 s.')
    record.healing!.inARow = 3
    expect(healer.outlook(record)).to.equal('it stays failed, as it crashed 4 times in a row and was relaunched 3 times: terminate it and launch it again.')
    const off = new ModelHealer({changed() {}, log: quiet, policy: {...DEFAULT_RESTART_POLICY, attempts: 0}})
    expect(off.outlook(record)).to.equal('it stays failed, as self-healing is off (SERVICE_RESTART_ATTEMPTS=0): terminate it and launch it again.')
  })

  it('gives up after the attempts in a row, leaving the model failed with the reason', async () => {
    failLaunch = new ServiceError(400, 'launch_failed', 'not a GGUF file')
    healer.crashed(record, crash)
    await record.healing!.settled
    expect(waits).to.deep.equal([1000, 2000, 4000])
    expect(record.status).to.equal('error')
    expect(record.error?.message).to.match(/relaunch failed: not a GGUF file/)
    expect(record.healing).to.include({lastError: 'relaunch failed: not a GGUF file', restarts: 3})
    expect(states.filter((state) => state.startsWith('restarting'))).to.have.length(3)
    expect(states.at(-1)).to.equal('error: relaunch failed: not a GGUF file')
  })

  it('gives up on a model that is ready for minutes each time but fails every request, and counts again once one is answered', async () => {
    const request = async () => {
      for await (const _ of modelHandle(record).invoke('chat', {}, new AbortController().signal));
    }

    failRequests = true
    for (let crashes = 1; crashes <= 4; crashes++) {
      healer.crashed(record, crash)
      await record.healing!.settled
      if (record.status !== 'ready') break
      // Up far longer than the policy's stable time, yet its first request fails and the process dies.
      clock += 10 * 60_000
      await request().catch(() => {})
    }

    expect(launches).to.have.length(3)
    expect(record.status).to.equal('error')
    expect(healer.outlook(record)).to.contain('it crashed 4 times in a row')

    failRequests = false
    record.healing = undefined
    healer.crashed(record, crash)
    await record.healing!.settled
    await request()
    clock += 10 * 60_000
    healer.crashed(record, crash)
    expect(record.healing).to.include({inARow: 1})
  })

  it('a request that arrives during the relaunch waits for it, then runs', async () => {
    healer.crashed(record, crash)
    const events = []
    for await (const event of modelHandle(record).invoke('chat', {}, new AbortController().signal)) events.push(event)
    expect(events).to.deep.equal([{text: 'hello'}])
  })

  it('stops during the backoff: nothing is launched and the model stays as the crash left it', async () => {
    holdBackoff = true
    healer.crashed(record, crash)
    await healer.stop(record)
    expect(launches).to.deep.equal([])
    expect(states).to.deep.equal([`restarting: ${crash.message}`])
  })

  it('relaunches a crashed replica of a model with several while the others serve, and puts it back in the rotation', async () => {
    const [first] = record.replicas
    const second = {...first, launch: {...first.launch!, load: {modelUid: 'demo-rep1'}} as InstanceLaunch, pid: 1001, uid: 'demo-rep1'}
    const table = new ModelTable()
    Object.assign(record, {error: undefined, replica: 2, replicas: [{...first, uid: 'demo-rep0'}, second], status: 'ready'})
    table.add(record)
    expect(table.markCrashed('demo-rep1', crash, 1001)).to.equal(undefined)
    expect(record.replicas.map((replica) => replica.uid)).to.deep.equal(['demo-rep0'])
    healer.replicaCrashed(record, second, crash)
    expect(record.status, 'the other replica serves meanwhile').to.equal('ready')
    await Promise.all(record.healing!.replicas!.running)
    expect(terminated).to.deep.equal(['demo-rep1'])
    expect(launches.map((launch) => launch.load.modelUid)).to.deep.equal(['demo-rep1'])
    expect(record.replicas.map((replica) => `${replica.uid}:${replica.pid}`)).to.deep.equal(['demo-rep0:1000', 'demo-rep1:2001'])
    expect(states).to.deep.equal([`restarting: ${crash.message}`, 'ready'])
  })

  it('stops the relaunch of a replica on a terminate', async () => {
    holdBackoff = true
    healer.replicaCrashed(record, record.replicas[0], crash)
    await healer.stop(record)
    expect(launches).to.deep.equal([])
  })

  it('keeps a replica out of the rotation holding its GPUs while it is relaunched, and lets them go once it gives up', async () => {
    holdBackoff = true
    const [first] = record.replicas
    const second = {...first, gpus: [1], uid: 'demo-rep1'}
    Object.assign(record, {replicas: [{...first, gpus: [0], uid: 'demo-rep0'}, second], status: 'ready'})
    new ModelTable().add(record)
    record.replicas = [record.replicas[0]]
    healer.replicaCrashed(record, second, crash)
    expect(replicasHoldingGpus(record).flatMap((replica) => replica.gpus), 'GPU 1 stays taken during the backoff').to.deep.equal([0, 1])
    await healer.stop(record)
    expect(replicasHoldingGpus(record).flatMap((replica) => replica.gpus)).to.deep.equal([0])
  })

  it('ignores a late report of the crashed process once its successor runs (a heartbeat sent before the relaunch)', async () => {
    const table = new ModelTable()
    table.add(record)
    healer.crashed(record, crash)
    await record.healing!.settled
    expect(table.markCrashed('demo', crash, 1000)).to.equal(undefined)
    expect(record.status).to.equal('ready')
    expect(table.markCrashed('demo', crash, 2001)).to.equal(record)
  })
})
