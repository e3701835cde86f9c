/** The Python environments of a cluster seen as one: every worker's listed together, a removal done on each that has it. */
import type {VirtualEnvironment} from '../protocol/virtualenvs.js'
import type {WorkerApi} from './worker.js'

import {conflict, notFound, ServiceError} from '../kernel/errors.js'

export async function virtualEnvironmentsOf(workers: WorkerApi[]): Promise<Array<VirtualEnvironment & {worker: string}>> {
  const lists = await Promise.all(workers.map(async (worker) => (await worker.virtualEnvironments()).map((entry) => ({...entry, worker: worker.id}))))
  return lists.flat()
}

/** The refusal to remove an environment the models named run with, each worker's by its id. */
export function environmentInUse(name: string, users: Array<{worker: string; models: string[]}>): ServiceError {
  const named = users.map(({models, worker}) => `${models.length === 1 ? 'model' : 'models'} ${models.join(', ')} on worker ${worker}`)
  const one = users.length === 1 && users[0].models.length === 1
  return conflict(`Python environment ${name} is in use by ${named.join('; ')}; terminate ${one ? 'it' : 'them'} first.`, 'name')
}

export async function removeVirtualEnvironmentFrom(workers: WorkerApi[], name: string): Promise<{name: string; paths: string[]}> {
  const holders = (await virtualEnvironmentsOf(workers)).filter((entry) => entry.name === name)
  if (holders.length === 0) throw notFound(`there is no Python environment named ${name}; \`servicectl virtualenvs\` lists them.`, 'not_found', 'name')
  // Refused before any copy goes, so that a refusal leaves every worker's copy as it was.
  const used = holders.filter((entry) => entry.models.length > 0)
  if (used.length > 0) throw environmentInUse(name, used)
  const paths: string[] = []
  for (const worker of workers.filter((w) => holders.some((entry) => entry.worker === w.id))) {
    // Workers sharing one folder (SERVICE_VIRTUALENV_DIR): the first removed it for all.
    const removed = await worker.removeVirtualEnvironment(name).catch((error: unknown) => {
      if (error instanceof ServiceError && error.status === 404 && paths.length > 0) return undefined
      throw error
    })
    if (removed !== undefined) paths.push(removed)
  }

  return {name, paths}
}
