/** A Python environment removed across a cluster's workers: refused before any copy goes, and once per shared folder. */
import {expect} from 'chai'

import type {WorkerApi} from '../../src/cluster/worker.js'

import {removeVirtualEnvironmentFrom} from '../../src/cluster/virtualenv-fanout.js'
import {notFound, ServiceError} from '../../src/kernel/errors.js'

const NAME = 'py3.11.7-0123456789abcdef'

/** A worker holding the environment (used by `models`), or sharing a folder another worker empties (`shared`). */
function worker(id: string, {models = [], shared}: {models?: string[]; shared?: {removed: boolean}} = {}) {
  const removed: string[] = []
  const api = {
    id,
    async removeVirtualEnvironment(name: string) {
      if (shared?.removed) throw notFound(`there is no Python environment named ${name}.`)
      if (shared) shared.removed = true
      removed.push(name)
      return `/${id}/virtualenv/${name}`
    },
    async virtualEnvironments() {
      return [{installer: 'uv', models, name: NAME, packages: [], python: '3.11.7', size_bytes: 1}]
    },
  }
  return {api: api as unknown as WorkerApi, removed}
}

describe('Python environments across workers', () => {
  it('refuses a removal while any worker runs a model with it, before any worker deletes its copy', async () => {
    const idle = worker('a')
    const busy = worker('b', {models: ['qwen']})
    const refusal = await removeVirtualEnvironmentFrom([idle.api, busy.api], NAME).catch((error: ServiceError) => error)
    expect(refusal).to.deep.include({param: 'name', status: 409})
    expect((refusal as ServiceError).message).to.equal(`Python environment ${NAME} is in use by model qwen on worker b; terminate it first.`)
    expect(idle.removed, 'the idle worker kept its copy').to.deep.equal([])
  })

  it('removes a folder that workers share once, and every worker\'s own copy', async () => {
    const shared = {removed: false}
    const [first, second, own] = [worker('a', {shared}), worker('b', {shared}), worker('c')]
    expect(await removeVirtualEnvironmentFrom([first.api, second.api, own.api], NAME)).to.deep.equal({name: NAME, paths: [`/a/virtualenv/${NAME}`, `/c/virtualenv/${NAME}`]})
  })
})
