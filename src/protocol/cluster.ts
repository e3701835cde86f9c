// Wire types of the cluster routes; see launch.ts for why they live in src/protocol/.

/** `GET /v1/cluster/info`: the cluster at a glance. */
export interface ClusterInfo {
  /** `local`: one `service-local` process; `cluster`: a supervisor with workers. */
  mode: 'local' | 'cluster'
  /** The process id of `service-local` or the supervisor. */
  pid: number
  version: string
  models: number
  workers: {ready: number; lost: number}
  heartbeat_interval_s: number | null
  lost_timeout_s: number | null
}
