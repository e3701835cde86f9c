/**
 * The whisper.cpp engine's host with the real @fugood/whisper.node binding and a random Whisper in ggml format: a
 * transcription whose client goes away settles at once (whisper.node's own promise never does once stopped), and
 * the model's only context serves the next request. It runs in a process of its own (fixtures/whisper-host), which
 * exits as a model process does: the stopped job's native handle would keep this one alive.
 */
import {expect} from 'chai'
import {execa} from 'execa'
import {resolve} from 'node:path'

import {temporaryDirectory} from '../helpers/service.js'

const SCENARIO = resolve(import.meta.dirname, '../fixtures/whisper-host/stop-and-serve.ts')

describe('whisper.cpp host (real binding)', function () {
  this.timeout(120_000)

  it('settles a transcription stopped mid-window with the abort, and the only context then serves the next request', async () => {
    const {stdout} = await execa('node', ['--import', 'tsx', SCENARIO, await temporaryDirectory()], {timeout: 110_000})
    const {last, stopped} = JSON.parse(stdout)
    expect(stopped).to.equal('the client went away')
    expect(last).to.deep.include({duration: 2, type: 'done'})
  })
})
