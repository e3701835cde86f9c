/**
 * A program that exits before it is ready, having written its cause far above its last lines (vLLM's engine process
 * raises, then its server ends with "See root cause above."): the launch fails with the engine's own reason for the
 * cause and the log's path, quoting nothing of the output; output of an earlier start in the same log is not read.
 * A real Python program writes the output, through the service's real spawner and log.
 */
import {expect} from 'chai'
import {writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import type {ExternalEngine} from '../../src/kernel/external-engine.js'

import {vllmStartFailure} from '../../plugins/engine-vllm/src/start-failure.js'
import {ServiceError} from '../../src/kernel/errors.js'
import {ExternalProgram} from '../../src/model-process/external-program.js'
import {temporaryDirectory} from '../helpers/service.js'

/** What vLLM 0.32's CPU build writes when the machine has less memory available than it reserves, then 30 lines. */
const VLLM_OUTPUT = `
import sys
print("(EngineCore pid=1) ValueError: Available memory on node 0 (20.1/23.5 GiB) on startup is less than desired CPU memory utilization (0.92, 21.6 GiB).", file=sys.stderr)
for line in range(30):
    print(f'  File "/env/lib/python3.11/site-packages/vllm/v1/engine/core_client.py", line {line}, in __init__', file=sys.stderr)
print("RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}", file=sys.stderr)
sys.exit(1)
`

const engine = (startFailure?: ExternalEngine['startFailure']): ExternalEngine => ({
  command: () => ({args: ['-c', VLLM_OUTPUT], file: 'python3'}),
  health: {intervalMs: 50, path: '/health', timeoutMs: 30_000},
  operations: {},
  ...(startFailure ? {startFailure} : {}),
})

const failedLaunch = async (program: ExternalProgram) => {
  try {
    await program.load({devices: [], modelPath: '/weights', modelUid: 'm'} as never)
  } catch (error) {
    return error as ServiceError
  }

  throw new Error('expected the launch to fail')
}

describe("a program's start failure told by the engine's reason for its root cause", function () {
  this.timeout(30_000)

  it("fails vLLM's launch with the cause of its engine's failure and the log's path, quoting no output", async () => {
    const logFile = join(await temporaryDirectory('start-failure-'), 'm.log')
    const error = await failedLaunch(new ExternalProgram('m', engine(vllmStartFailure), {logFile}))
    expect(error).to.include({code: 'launch_failed', status: 500})
    expect(error.message).to.equal(
      `model m's program exited with code 1 before it was ready: vLLM's engine failed to start: this machine has less memory available than vLLM's CPU build reserves at start (gpu_memory_utilization of all its memory); give --cpu_kvcache_space <GiB> or a smaller gpu_memory_utilization; its output is in ${logFile}.`,
    )
  })

  it("keeps the usual reason for an engine that recognises nothing, and reads only this start's output", async () => {
    const logFile = join(await temporaryDirectory('start-failure-'), 'm.log')
    const unrecognised = await failedLaunch(new ExternalProgram('m', engine(), {logFile}))
    // Nothing of the program's output reaches the caller: where to read it is said instead.
    expect(unrecognised.message).to.match(/^model m's program exited with code 1 before it was ready( \([^)]*\))?; its output is in the model's log/)

    // An earlier start's cause in the same log is not this start's.
    await writeFile(logFile, "ValueError: User-specified max_model_len (100000) is greater than the derived max_model_len\n")
    const seen: string[] = []
    const reading = (output: string) => {
      seen.push(output)
      return vllmStartFailure(output)
    }

    const error = await failedLaunch(new ExternalProgram('m', engine(reading), {logFile}))
    expect(seen[0]).not.to.contain('max_model_len')
    expect(error.message).to.contain('less memory available')
  })
})
