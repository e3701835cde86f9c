/**
 * A worker's hold on a uid: taken by a launch before its first await, so a second launch of the uid is refused while
 * the first still checks, and a launch that ends lets the uid go for the next one.
 */
import {expect} from 'chai'
import {join} from 'node:path'

import type {EngineDefinition} from '../../src/kernel/contracts.js'
import type {InstanceLaunch} from '../../src/protocol/worker.js'

import {LocalWorker} from '../../src/cluster/worker.js'
import {ServiceError} from '../../src/kernel/errors.js'
import {createKernelApi, Kernel} from '../../src/kernel/kernel.js'
import {WeightStore} from '../../src/weights/store.js'
import {temporaryDirectory} from '../helpers/service.js'

const quiet = {debug() {}, error() {}, info() {}, warn() {}}

describe('worker: a uid launching', () => {
  it('refuses a second launch of a uid while the first still checks, and takes the next once the first has ended', async () => {
    const checks: Array<(error: Error) => void> = []
    const engine: EngineDefinition = {
      checkLaunch: () => new Promise<void>((_, reject) => checks.push(reject)),
      formats: ['ggufv2'],
      hostModule: '/nowhere.js',
      modelTypes: ['LLM'],
      name: 'checking',
      parameters: {},
    }
    const kernel = Kernel.fromContributions(createKernelApi('0.0.0', quiet), [
      {contribution: {engines: [engine], modelTypes: [{defaultAbilities: ['chat'], description: 'LLM', name: 'LLM'}]}, plugin: 'core'},
    ])
    const directory = await temporaryDirectory()
    const worker = new LocalWorker({id: 'local', kernel, log: quiet, logDir: join(directory, 'logs'), weights: new WeightStore({cacheDir: join(directory, 'cache'), log: quiet})})
    const launch = {engine: 'checking', load: {family: {model_name: 'm'}, modelType: 'LLM', modelUid: 'm', parameters: {}, spec: {model_uri: 'file:///m.gguf'}}} as unknown as InstanceLaunch
    const outcome = (started: Promise<unknown>) => started.then(() => 'launched', (error: ServiceError) => `${error.status}: ${error.message}`)

    const first = outcome(worker.launch(launch))
    expect(await outcome(worker.launch(launch))).to.equal('409: model uid "m" is already running (or launching, or ending) on worker local.')
    checks[0](new ServiceError(400, 'invalid_request', 'not this one'))
    expect(await first).to.equal('400: not this one')
    const next = outcome(worker.launch(launch))
    await new Promise((resolve) => setImmediate(resolve))
    expect(checks, 'the next launch got as far as its check').to.have.length(2)
    checks[1](new ServiceError(400, 'invalid_request', 'nor this one'))
    expect(await next).to.equal('400: nor this one')
  })
})
