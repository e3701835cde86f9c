/**
 * The desired-state store, fed by a ServiceEvents emitter: ready launches are added with their request, an
 * operator's terminate removes them, a crash or a cancelled launch keeps them, Xinference's autostart adds and
 * removes; writes are serialised and atomic (no temporary file left, the last state wins); a corrupt file is reported
 * and ignored; restoring goes on past a failure.
 */
import {expect} from 'chai'
import {readdir, readFile, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import {DesiredModels, restoreDesiredModels} from '../../src/cluster/desired-models.js'
import {type ModelState, ServiceEvents} from '../../src/kernel/observability.js'
import {temporaryDirectory} from '../helpers/service.js'

function recordingLog() {
  const lines: string[] = []
  const keep = (message: string) => void lines.push(message)
  return {debug: keep, error: keep, info: keep, lines, warn: keep}
}

describe('desired models', () => {
  let events: ServiceEvents
  let file: string
  const state = (uid: string, to: ModelState, reason?: string) =>
    events.report('model', {
      launch: to === 'launching' ? {model_engine: 'llama.cpp', model_name: 'tiny', n_ctx: 256} : undefined,
      modelName: 'tiny',
      modelType: 'LLM',
      reason,
      state: to,
      uid,
    })
  const onDisk = async () => JSON.parse(await readFile(file, 'utf8')).models.map((model: {launch: {model_uid: string}}) => model.launch.model_uid)

  beforeEach(async () => {
    events = new ServiceEvents()
    file = join(await temporaryDirectory(), 'desired-models.json')
  })

  it('adds a launch once ready, with its request and uid, and removes it on an operator terminate only', async () => {
    const desired = await DesiredModels.open(events, {file, log: recordingLog()})
    state('a', 'launching')
    expect(desired.list()).to.deep.equal([])
    state('a', 'ready')
    state('b', 'launching')
    state('b', 'ready')
    state('failed', 'launching')
    state('failed', 'error', 'no memory')
    expect(desired.list().map((model) => model.launch)).to.deep.equal([
      {model_engine: 'llama.cpp', model_name: 'tiny', model_uid: 'a', n_ctx: 256},
      {model_engine: 'llama.cpp', model_name: 'tiny', model_uid: 'b', n_ctx: 256},
    ])
    state('a', 'error', 'killed by SIGKILL')
    state('b', 'terminated', 'the launch was cancelled: the service is shutting down')
    await desired.flush()
    expect(await onDisk()).to.deep.equal(['a', 'b'])
    expect(desired.list()[0].last_error?.message).to.equal('killed by SIGKILL')
    state('b', 'terminated')
    await desired.flush()
    expect(await onDisk()).to.deep.equal(['a'])
  })

  it("keeps a model added before its launch is ready, with a failed launch's reason; one removed while launching is not added once ready", async () => {
    const desired = await DesiredModels.open(events, {file, log: recordingLog()})
    desired.add({model_engine: 'llama.cpp', model_name: 'tiny', model_uid: 'added'})
    state('added', 'launching')
    state('added', 'error', 'no memory')
    state('dropped', 'launching')
    expect(desired.remove('dropped')).to.equal(false)
    state('dropped', 'ready')
    await desired.flush()
    expect(await onDisk()).to.deep.equal(['added'])
    expect(desired.list()[0].last_error?.message).to.equal('no memory')
    expect(desired.remove('added')).to.equal(true)
    await desired.flush()
    expect(await onDisk()).to.deep.equal([])
  })

  it('writes one after another, atomically: the last state is on disk and no temporary file is left', async () => {
    const desired = await DesiredModels.open(events, {file, log: recordingLog()})
    for (let i = 0; i < 50; i++) {
      state(`m${i}`, 'launching')
      state(`m${i}`, 'ready')
      if (i % 2) state(`m${i}`, 'terminated')
    }

    await desired.flush()
    expect(await onDisk()).to.have.length(25)
    expect(await readdir(join(file, '..'))).to.deep.equal(['desired-models.json'])
    const reopened = await DesiredModels.open(new ServiceEvents(), {file, log: recordingLog()})
    expect(reopened.list()).to.deep.equal(desired.list())
  })

  it('reports a corrupt file and starts with none, then writes a good one', async () => {
    await writeFile(file, '{"models": [{"launch": ')
    const log = recordingLog()
    const desired = await DesiredModels.open(events, {file, log})
    expect(desired.list()).to.deep.equal([])
    expect(log.lines.join('\n')).to.contain('ignoring the desired models')
    state('a', 'launching')
    state('a', 'ready')
    await desired.flush()
    expect(await onDisk()).to.deep.equal(['a'])
  })

  it('restores every model in order, going on past one that fails, and stops when the service stops', async () => {
    const desired = await DesiredModels.open(events, {file, log: recordingLog()})
    for (const uid of ['a', 'b', 'c']) {
      state(uid, 'launching')
      state(uid, 'ready')
    }

    const log = recordingLog()
    const launched: string[] = []
    await restoreDesiredModels(desired, async (request) => {
      launched.push(request.model_uid!)
      if (request.model_uid === 'b') throw new Error('weights not cached')
    }, {log, signal: new AbortController().signal})
    expect(launched).to.deep.equal(['a', 'b', 'c'])
    expect(log.lines).to.include('could not restore b: weights not cached')
    expect(desired.list().map((model) => model.last_error?.message)).to.deep.equal([undefined, 'weights not cached', undefined])
    await desired.flush()
    expect(JSON.parse(await readFile(file, 'utf8')).models[1].last_error.message).to.equal('weights not cached')
    const stopping = new AbortController()
    const none: string[] = []
    await restoreDesiredModels(desired, async (request) => {
      none.push(request.model_uid!)
      stopping.abort()
    }, {log, signal: stopping.signal})
    expect(none).to.deep.equal(['a'])
  })
})
