/** The Python virtual environments of engines that run Python, as `GET /v1/virtualenvs` lists them. */
import * as s from '../kernel/schema.js'

const virtualEnvironmentShape = {
  created_at: s.string({description: 'When it was made (ISO 8601).'}),
  installer: s.string({description: '`uv` or `pip`: what made it.'}),
  models: s.array(s.string(), {description: 'The uids of the models running (or launching) with it.'}),
  name: s.string({description: "Its folder's name: `py<python version>-<hash of its packages and sources>`."}),
  packages: s.array(s.string()),
  path: s.string(),
  python: s.string(),
  size_bytes: s.number({description: 'Bytes of its files, as if it were alone on the disk.', minimum: 0}),
  shared_bytes: s.number({description: "Of size_bytes, the bytes of files hard-linked into another of the worker's environments as well (uv links the same package files from its cache).", minimum: 0}),
  disk_bytes: s.number({
    description: "Its part of the disk the worker's environments take together: a shared file counted in the first environment (by name) that has it, as `du` counts; a worker's disk_bytes add up to its environments' real size.",
    minimum: 0,
  }),
}

export const virtualEnvironmentSchema = s.object(virtualEnvironmentShape, {title: 'VirtualEnvironment'})

export type VirtualEnvironment = s.Infer<typeof virtualEnvironmentSchema>

/** `GET /v1/virtualenvs`: every worker's environments, each with the worker that has it. */
export const virtualEnvironmentListSchema = s.object(
  {list: s.array(s.object({...virtualEnvironmentShape, worker: s.string()}, {title: 'WorkerVirtualEnvironment'}))},
  {title: 'VirtualEnvironmentList'},
)

/** `DELETE /v1/virtualenvs/{name}`: the folders removed, on every worker that had it. */
export const virtualEnvironmentRemovalSchema = s.object(
  {name: s.string(), paths: s.array(s.string()), result: s.boolean()},
  {title: 'VirtualEnvironmentRemoval'},
)

/** What the environment routes need of the service behind them. */
export interface VirtualEnvironmentService {
  virtualEnvironments(): Promise<Array<VirtualEnvironment & {worker: string}>>
  /** Deletes an environment from every worker that has it; refused while a model there uses it. */
  removeVirtualEnvironment(name: string): Promise<{name: string; paths: string[]}>
}
