/**
 * Which GPUs this machine has, for workers to report and placement to hand out. NVIDIA GPUs are read from
 * `nvidia-smi` (the one tool every NVIDIA driver installs), run once when a worker starts; a machine without it,
 * or whose driver does not answer, has no GPUs. The command is injected so tests can feed canned output.
 */
import {execFile} from 'node:child_process'
import {promisify} from 'node:util'

import type {Logger} from '../kernel/contracts.js'
import type {GpuDevice} from '../protocol/worker.js'

/** Runs a program with arguments and answers what it printed; rejects when it cannot run or fails. */
export type RunProgram = (program: string, args: string[]) => Promise<string>

export const NVIDIA_SMI_QUERY = ['--query-gpu=index,name,memory.total,memory.used,uuid', '--format=csv,noheader,nounits']

const MIB = 1024 ** 2
/** nvidia-smi answers at once when the driver is loaded; a hung driver must not hold up the worker's start. */
const TIMEOUT_MS = 10_000

const runProgram: RunProgram = async (program, args) => (await promisify(execFile)(program, args, {timeout: TIMEOUT_MS})).stdout

/** The GPUs in nvidia-smi's CSV (`index, name, memory.total MiB, memory.used MiB, uuid` a line); odd lines are skipped. */
export function parseNvidiaSmi(csv: string): GpuDevice[] {
  const gpus: GpuDevice[] = []
  for (const line of csv.split('\n')) {
    const fields = line.split(',').map((field) => field.trim())
    if (fields.length !== 5) continue
    const [index, name, total, used, uuid] = fields
    const [indexNumber, totalMib, usedMib] = [Number(index), Number(total), Number(used)]
    if (!Number.isInteger(indexNumber) || !Number.isFinite(totalMib) || !Number.isFinite(usedMib)) continue
    gpus.push({index: indexNumber, memory_free_bytes: Math.max(0, totalMib - usedMib) * MIB, memory_total_bytes: totalMib * MIB, name, uuid})
  }

  return gpus
}

/** This machine's NVIDIA GPUs; none when nvidia-smi is missing or fails (said in the log at debug level). */
export async function discoverGpus(log: Logger, run: RunProgram = runProgram): Promise<GpuDevice[]> {
  try {
    const gpus = parseNvidiaSmi(await run('nvidia-smi', NVIDIA_SMI_QUERY))
    if (gpus.length > 0) log.info(`GPUs: ${gpus.map((gpu) => `${gpu.index} ${gpu.name} (${(gpu.memory_total_bytes / 1024 ** 3).toFixed(1)} GiB)`).join(', ')}`)
    return gpus
  } catch (error) {
    log.debug(`no NVIDIA GPUs: nvidia-smi ${(error as Error).message}`)
    return []
  }
}
