/** The Python environments of a cluster seen as one: every worker's listed together, a removal done on each that has it. */
import type {VirtualEnvironment} from '../protocol/virtualenvs.js'
import type {WorkerApi} from './worker.js'

import {notFound} from '../kernel/errors.js'

export async function virtualEnvironmentsOf(workers: WorkerApi[]): Promise<Array<VirtualEnvironment & {worker: string}>> {
  const lists = await Promise.all(workers.map(async (worker) => (await worker.virtualEnvironments()).map((entry) => ({...entry, worker: worker.id}))))
  return lists.flat()
}

export async function removeVirtualEnvironmentFrom(workers: WorkerApi[], name: string): Promise<{name: string; paths: string[]}> {
  const holders = (await virtualEnvironmentsOf(workers)).filter((entry) => entry.name === name)
  if (holders.length === 0) throw notFound(`there is no Python environment named ${name}; \`servicectl virtualenvs\` lists them.`, 'not_found', 'name')
  const paths: string[] = []
  for (const worker of workers.filter((w) => holders.some((entry) => entry.worker === w.id))) paths.push(await worker.removeVirtualEnvironment(name))
  return {name, paths}
}
