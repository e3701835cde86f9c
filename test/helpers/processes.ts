/** What tests ask of operating-system processes: which children a process has, and whether a pid still runs. */
import {execa} from 'execa'

/** The pids of a process's children (its model processes, for a service). */
export async function childPids(pid: number): Promise<number[]> {
  const {stdout} = await execa('pgrep', ['-P', String(pid)], {reject: false})
  return stdout.split('\n').filter(Boolean).map(Number)
}

export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}
