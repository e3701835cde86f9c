/**
 * The registry's side of reach (src/kernel/registry.ts): a user without admin holds at most the quota of
 * registrations, counted again after a restart from the owner kept beside each file; and registrations saved before an
 * operator's allow-list was set are checked against it when the service starts.
 */
import {expect} from 'chai'
import {join} from 'node:path'

import type {Authority} from '../../src/kernel/reach.js'

import {createKernelApi, Kernel} from '../../src/kernel/kernel.js'
import {SERVICE_AUTHORITY} from '../../src/kernel/reach.js'
import {ModelRegistry, type RegistryOptions} from '../../src/kernel/registry.js'
import {temporaryDirectory} from '../helpers/service.js'

const quiet = {debug() {}, error() {}, info() {}, warn() {}}
const alice: Authority = {admin: false, username: 'alice'}
const bob: Authority = {admin: false, username: 'bob'}

const hubModel = (name: string, extra: Record<string, unknown> = {}) => ({
  model_ability: ['chat'],
  model_name: name,
  model_specs: [{model_format: 'pytorch', model_id: 'org/model', model_size_in_billions: 1, quantization: 'none'}],
  ...extra,
})

describe('the registry: quota and allow-lists', () => {
  let directory: string
  const kernel = Kernel.fromContributions(createKernelApi('0.0.0', quiet), [{contribution: {modelTypes: [{defaultAbilities: ['chat'], description: 'LLM', name: 'LLM'}]}, plugin: 'core'}])
  const registryOf = async (options: RegistryOptions) => {
    const registry = new ModelRegistry(kernel, directory, quiet, options)
    await registry.load()
    return registry
  }

  const refusal = (promise: Promise<unknown>) =>
    promise.then(
      () => expect.fail('it was registered'),
      (error) => error as {status: number; code: string; message: string},
    )

  beforeEach(async () => {
    directory = join(await temporaryDirectory(), 'registrations')
  })

  it('holds each user without admin to the quota, counted again after a restart, and frees a place on unregistering', async () => {
    let registry = await registryOf({maxRegistrationsPerUser: 2})
    await registry.register('LLM', hubModel('a1'), {authority: alice})
    await registry.register('LLM', hubModel('a2'), {authority: alice})
    expect(await refusal(registry.register('LLM', hubModel('a3'), {authority: alice}))).to.include({code: 'quota_exceeded', status: 403})

    registry = await registryOf({maxRegistrationsPerUser: 2})
    const again = await refusal(registry.register('LLM', hubModel('a3'), {authority: alice}))
    expect(again.message).to.contain('user "alice" already has 2 registrations').and.to.contain('SERVICE_MAX_REGISTRATIONS_PER_USER=2')
    await registry.register('LLM', hubModel('b1'), {authority: bob})
    await registry.register('LLM', hubModel('root1'), {authority: {admin: true, username: 'root'}})
    await registry.register('LLM', hubModel('root2'), {authority: SERVICE_AUTHORITY})
    await registry.unregister('LLM', 'a1')
    await registry.register('LLM', hubModel('a3'), {authority: alice})
  })

  it('skips, at start, saved registrations that an allow-list set since then does not allow', async () => {
    const registry = await registryOf({})
    await registry.register('LLM', hubModel('planted', {launcher_args: {module: 'pydoc'}}), {authority: SERVICE_AUTHORITY})
    await registry.register('LLM', hubModel('listed', {launcher_args: {module: 'my_models.chat'}}), {authority: SERVICE_AUTHORITY})
    const restarted = await registryOf({allowedPythonModules: ['my_models']})
    expect(restarted.list('LLM').map(({model_name}) => model_name)).to.deep.equal(['listed'])
    expect(restarted.problems.join('\n')).to.match(/skipped registration .*planted\.json: launcher_args\.module .*SERVICE_ALLOWED_PYTHON_MODULES does not allow it/)
  })
})
