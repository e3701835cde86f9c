/** The Python virtual environments of engines that run Python, as `GET /v1/virtualenvs` lists them. */

export interface VirtualEnvironment {
  /** Its folder's name: `py<python version>-<hash of its packages and sources>`. */
  name: string
  path: string
  python: string
  /** `uv` or `pip`: what made it. */
  installer: string
  packages: string[]
  size_bytes: number
  created_at: string
  /** The uids of the models running (or launching) with it. */
  models: string[]
}

/** What the environment routes need of the service behind them. */
export interface VirtualEnvironmentService {
  virtualEnvironments(): Promise<Array<VirtualEnvironment & {worker: string}>>
  /** Deletes an environment from every worker that has it; refused while a model there uses it. */
  removeVirtualEnvironment(name: string): Promise<{name: string; paths: string[]}>
}
