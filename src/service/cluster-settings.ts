/**
 * The cluster's settings that come from the environment rather than flags: the shared secret's variable, and the
 * failure detection's timing, which tests turn down to run fast. Read here, where a service is started, so that the
 * protocol stays the wire's types and nothing else.
 */
import type {ClusterTiming} from '../protocol/membership.js'

/** Environment variables that tune failure detection (seconds). */
export const HEARTBEAT_INTERVAL_ENV = 'SERVICE_HEARTBEAT_INTERVAL'
export const LOST_TIMEOUT_ENV = 'SERVICE_WORKER_LOST_TIMEOUT'
export const CLUSTER_TOKEN_ENV = 'SERVICE_CLUSTER_TOKEN'

export function clusterTiming(env: NodeJS.ProcessEnv = process.env): ClusterTiming {
  const seconds = (name: string, fallback: number) => {
    const value = Number(env[name])
    return Number.isFinite(value) && value > 0 ? value * 1000 : fallback * 1000
  }

  // Three heartbeats may go missing before a worker counts as lost: 3 s × 3 + 1 s of slack, within 15 s.
  return {heartbeatMs: seconds(HEARTBEAT_INTERVAL_ENV, 3), lostMs: seconds(LOST_TIMEOUT_ENV, 10)}
}
