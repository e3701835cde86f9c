/**
 * A running service's stop: the first call runs its ordered shutdown, later calls (a second signal, a
 * `stop-cluster` request) share that run, and `stopped` settles once it has finished, whoever started it.
 */
export function stopOnce(shutdown: () => Promise<void>): {stop(): Promise<void>; stopped: Promise<void>} {
  let stopping: Promise<void> | undefined
  let resolveStopped!: () => void
  const stopped = new Promise<void>((resolve) => (resolveStopped = resolve))
  return {stop: () => (stopping ??= shutdown().then(resolveStopped)), stopped}
}
