/**
 * What a worker measures of itself for the metrics: the memory and CPU time of its own process and of each model
 * process (with pidusage, which reads them the same way on Linux, macOS and Windows), and its downloads of weights.
 * A worker sends them in its heartbeats, so a cluster's supervisor serves every worker's, labelled by worker.
 */
import type {ServiceEvents} from '../kernel/observability.js'
import type {DownloadTally, ProcessUsage, WorkerResources} from '../protocol/worker.js'

export class WorkerUsage {
  private readonly processes = new Map<number, ProcessUsage>()
  private readonly downloads = new Map<string, DownloadTally>()

  /** `events`: where the worker's weight store reports its downloads. */
  constructor(events?: ServiceEvents) {
    events?.on('download', ({bytes, hub, outcome}) => {
      const key = `${hub}\n${outcome}`
      const tally = this.downloads.get(key) ?? {bytes: 0, count: 0, hub, outcome}
      tally.count++
      tally.bytes += Math.max(bytes, 0)
      this.downloads.set(key, tally)
    })
  }

  /** Measures these processes now; one that is gone is left out. */
  async measure(pids: number[]): Promise<void> {
    const {default: pidusage} = await import('pidusage')
    const measured = await Promise.allSettled(pids.map(async (pid) => [pid, await pidusage(pid)] as const))
    this.processes.clear()
    for (const result of measured)
      if (result.status === 'fulfilled') this.processes.set(result.value[0], {cpu_seconds: result.value[1].ctime / 1000, resident_memory_bytes: result.value[1].memory})
  }

  /** A process's last measure. */
  of(pid: number | undefined): ProcessUsage | undefined {
    return pid === undefined ? undefined : this.processes.get(pid)
  }

  /** The worker's own process, now, and its downloads so far. */
  resources(): Pick<WorkerResources, 'downloads' | 'process'> {
    const cpu = process.cpuUsage()
    return {downloads: [...this.downloads.values()].map((tally) => ({...tally})), process: {cpu_seconds: (cpu.user + cpu.system) / 1e6, resident_memory_bytes: process.memoryUsage.rss()}}
  }
}
