/**
 * The events ring and the launch history, fed by a ServiceEvents emitter with an injected clock: the kinds a
 * model's life produces, download milestones bounded to five, the ring's bounds and how long it outlives its
 * model; the history's outcomes, its bound, and its file read back by a new instance.
 */
import {expect} from 'chai'
import {readFile, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import {LaunchHistory} from '../../src/cluster/launch-history.js'
import {ModelEventLog} from '../../src/cluster/model-events.js'
import {type ModelState, ServiceEvents} from '../../src/kernel/observability.js'
import {temporaryDirectory} from '../helpers/service.js'

const silent = {debug() {}, error() {}, info() {}, warn() {}}

describe('model events', () => {
  let clock: number
  let events: ServiceEvents
  let log: ModelEventLog
  const state = (uid: string, to: ModelState, reason?: string) =>
    events.report('model', {details: to === 'launching' ? {model_engine: 'llama.cpp'} : undefined, modelName: 'tiny', modelType: 'LLM', reason, state: to, uid})
  const kinds = (uid: string) => log.events(uid).map((event) => event.kind)

  beforeEach(() => {
    clock = 1_000_000
    events = new ServiceEvents()
    log = new ModelEventLog(events, {keptMs: 60_000, models: 3, now: () => clock, perModel: 6})
  })

  it('reports download milestones once each, at most five per launch, with their bytes', () => {
    state('a', 'launching')
    for (const downloaded of [0, 10, 30, 31, 60, 99, 100, 100]) events.report('launchStep', {downloadedBytes: downloaded, stage: 'downloading', totalBytes: 100, uid: 'a'})
    events.report('launchStep', {stage: 'loading', uid: 'a'})
    events.report('launchStep', {stage: 'loading', uid: 'a'})
    const downloads = log.events('a').filter((event) => event.kind === 'download')
    expect(downloads.map((event) => event.details.percent)).to.deep.equal([0, 25, 50, 75, 100])
    expect(downloads[2].details).to.deep.equal({downloaded_bytes: 60, percent: 50, total_bytes: 100})
    expect(kinds('a').at(-1)).to.equal('loading')
    expect(kinds('a').filter((kind) => kind === 'loading')).to.have.length(1)
  })

  it('tells a crash from a failed launch and a cancel from a terminate', () => {
    state('ran', 'launching')
    state('ran', 'ready')
    state('ran', 'error', 'killed by SIGKILL')
    state('ran', 'terminated')
    expect(kinds('ran')).to.deep.equal(['launch', 'ready', 'crash', 'terminate'])
    expect(log.events('ran')[2]).to.deep.include({details: {reason: 'killed by SIGKILL'}, event_type: 'ERROR'})
    state('failed', 'launching')
    state('failed', 'error', 'no memory')
    expect(kinds('failed')).to.deep.equal(['launch', 'launch_failed'])
    state('cancelled', 'launching')
    state('cancelled', 'terminated', 'the launch was cancelled')
    expect(kinds('cancelled')).to.deep.equal(['launch', 'cancelled'])
  })

  it('reports a self-healing relaunch as restart, a failed relaunch as launch_failed, and the model ready again', () => {
    log = new ModelEventLog(events, {keptMs: 60_000, now: () => clock})
    state('healed', 'launching')
    state('healed', 'ready')
    state('healed', 'error', 'killed by SIGKILL')
    state('healed', 'restarting', 'killed by SIGKILL')
    state('healed', 'error', 'relaunch failed: not a GGUF file')
    state('healed', 'restarting', 'relaunch failed: not a GGUF file')
    state('healed', 'ready')
    expect(kinds('healed')).to.deep.equal(['launch', 'ready', 'crash', 'restart', 'launch_failed', 'restart', 'ready'])
    expect(log.events('healed')[3]).to.deep.include({details: {reason: 'killed by SIGKILL'}, event_type: 'WARNING'})
    clock += 120_000
    expect(kinds('healed'), 'a healed model is running, so its events stay').to.have.length(7)
  })

  it("keeps a model's newest events, for keptMs after it ended, and a bounded number of ended models", () => {
    state('a', 'launching')
    state('a', 'ready')
    for (let i = 0; i < 3; i++) {
      state('a', 'error', `crash ${i}`)
      state('a', 'ready')
    }
    expect(kinds('a')).to.have.length(6)
    expect(log.events('a')[0]).to.deep.include({details: {reason: 'crash 0'}, kind: 'crash'})
    state('a', 'terminated')
    clock += 60_000
    expect(kinds('a').at(-1)).to.equal('terminate')
    clock += 1
    expect(() => log.events('a')).to.throw('has no events')

    for (const uid of ['b', 'c', 'd', 'e']) {
      state(uid, 'launching')
      state(uid, 'terminated')
      clock += 1
    }
    expect(() => log.events('b')).to.throw('has no events')
    for (const uid of ['c', 'd', 'e']) expect(kinds(uid)).to.deep.equal(['launch', 'cancelled'])
  })
})

describe('launch history', () => {
  let clock: number
  let events: ServiceEvents
  let file: string
  const state = (uid: string, to: ModelState, reason?: string) =>
    events.report('model', {details: to === 'launching' ? {model_engine: 'llama.cpp', quantization: 'q4_0'} : undefined, modelName: 'tiny', modelType: 'LLM', reason, state: to, uid})

  beforeEach(async () => {
    clock = 5000
    events = new ServiceEvents()
    file = join(await temporaryDirectory(), 'launch-history.json')
  })

  it('keeps each launch with its outcome, the newest `limit`, and reads them back after close, which stops the running ones', async () => {
    const history = await LaunchHistory.open(events, {file, limit: 3, log: silent, now: () => clock})
    state('failed', 'launching')
    state('failed', 'error', 'no memory')
    state('crashed', 'launching')
    state('crashed', 'ready')
    clock = 6000
    state('crashed', 'error', 'killed')
    state('crashed', 'terminated')
    state('ended', 'launching')
    state('ended', 'ready')
    state('ended', 'terminated')
    state('running', 'launching')
    state('running', 'ready')
    const listed = history.list()
    expect(listed.map((launch) => [launch.model_uid, launch.outcome, launch.reason])).to.deep.equal([
      ['running', 'running', null],
      ['ended', 'terminated', null],
      ['crashed', 'crashed', 'killed'],
    ])
    expect(listed[2]).to.deep.include({data: {quantization: 'q4_0'}, ended: 6000, model_engine: 'llama.cpp', started: 5000})
    expect(history.list('nothing')).to.deep.equal([])

    await history.close()
    const reopened = await LaunchHistory.open(new ServiceEvents(), {file, log: silent})
    expect(reopened.list().slice(1)).to.deep.equal(listed.slice(1))
    expect(reopened.list()[0]).to.deep.include({ended: 6000, model_uid: 'running', outcome: 'stopped', reason: 'the service stopped'})
  })

  it('reads a launch the file says still runs (the service was killed) as stopped', async () => {
    const launch = {data: {}, ended: null, model_engine: 'llama.cpp', model_name: 'tiny', model_type: 'LLM', model_uid: 'cut', outcome: 'running', reason: null, started: 1000}
    await writeFile(file, JSON.stringify([launch]))
    const history = await LaunchHistory.open(events, {file, log: silent, now: () => 7000})
    expect(history.list()).to.deep.equal([{...launch, ended: 7000, outcome: 'stopped', reason: 'the service stopped while it ran'}])
    await history.close()
    expect(JSON.parse(await readFile(file, 'utf8'))).to.deep.equal(history.list())
  })

  it('ends the running launches as stopped on close, and starts empty from a file that is not a list', async () => {
    const history = await LaunchHistory.open(events, {file, log: silent, now: () => clock})
    state('a', 'launching')
    state('a', 'ready')
    await history.close()
    expect(JSON.parse(await readFile(file, 'utf8'))[0]).to.deep.include({model_uid: 'a', outcome: 'stopped', reason: 'the service stopped'})
    await writeFile(file, '{"not": "a list"}')
    expect((await LaunchHistory.open(events, {file, log: silent})).list()).to.deep.equal([])
  })
})
