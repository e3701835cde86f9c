/**
 * Whether an engine can run a spec on the workers there are (engine-fit.ts): memory for the spec's weights, then the
 * engine's own `canRun`, worker by worker, with the devices and memory handed in.
 */
import {expect} from 'chai'

import type {WorkerFacts} from '../../src/kernel/contracts.js'
import type {WorkerStatus} from '../../src/protocol/worker.js'

import {mlxAvailability} from '../../plugins/engine-mlx/src/server-command.js'
import {sglangAvailability} from '../../plugins/engine-sglang/src/register.js'
import {ableCandidates, anyMachine, bytesPerParameter, fitOnWorker, fitOnWorkers, machineFits, weightsBytes, workerFacts} from '../../src/cluster/engine-fit.js'
import {ServiceError} from '../../src/kernel/errors.js'

const GIB = 1024 ** 3
const spec = (size: string, quantization = 'none') =>
  ({model_file_name_template: null, model_file_name_split_template: null, model_format: 'pytorch', model_hub: 'huggingface', model_id: 'org/m', model_revision: null, model_size_in_billions: size, model_uri: null, quantization, quantization_parts: null}) as const
const cpu: WorkerFacts = {arch: 'x64', gpus: [], id: 'cpu-box', memoryTotalBytes: 16 * GIB, platform: 'linux'}
const gpu: WorkerFacts = {arch: 'x64', gpus: [{memory_total_bytes: 80 * GIB, name: 'NVIDIA H100'}], id: 'gpu-box', memoryTotalBytes: 64 * GIB, platform: 'linux'}
/** An engine that needs an NVIDIA GPU, as an engine's canRun says it. */
const gpuOnly = {canRun: (_request: unknown, worker: WorkerFacts) => (worker.gpus.length > 0 ? (true as const) : 'it needs an NVIDIA GPU.')}

describe('engine fit: which engine × spec pairs the workers can run', () => {
  it('reads the bytes a parameter takes from the quantization, 16-bit weights when it names no bits', () => {
    expect(['none', 'bf16', 'q4_k_m', 'Q8_0', 'Int4', 'fp8', 'IQ2_XXS', '4bit'].map(bytesPerParameter)).to.deep.equal([2, 2, 0.5, 1, 0.5, 1, 0.25, 0.5])
    expect(weightsBytes(spec('7'))).to.equal(14e9)
    expect(weightsBytes(spec('0_5', 'q4_0'))).to.equal(0.25e9)
    expect(weightsBytes(spec('none'))).to.equal(undefined)
  })

  it("refuses weights larger than the worker's memory and GPU memory together, then asks the engine", () => {
    const request = {modelName: 'm', spec: spec('72')}
    const reason = fitOnWorker({}, request, cpu)
    expect(reason).to.equal('its 72B weights take about 134.1 GiB, more than the 16.0 GiB of memory the worker has; choose a smaller size or quantization.')
    expect(fitOnWorker({}, request, gpu)).to.equal(true)
    expect(fitOnWorker({}, {modelName: 'm', spec: spec('7', 'q4_k_m')}, cpu)).to.equal(true)
    expect(fitOnWorker(gpuOnly, {modelName: 'm', spec: spec('7')}, cpu)).to.equal('it needs an NVIDIA GPU.')
  })

  it('takes a pair any worker can run, and otherwise says why worker by worker', () => {
    const request = {modelName: 'm', spec: spec('7')}
    expect(fitOnWorkers(gpuOnly, request, [cpu, gpu])).to.equal(true)
    expect(fitOnWorkers(gpuOnly, request, [cpu])).to.equal('it needs an NVIDIA GPU.')
    expect(fitOnWorkers(gpuOnly, request, [cpu, {...cpu, id: 'laptop'}])).to.equal('worker cpu-box: it needs an NVIDIA GPU. worker laptop: it needs an NVIDIA GPU.')
  })

  it('places a launch only on the workers that can run it, and refuses it naming model_engine when none can', () => {
    const status = (facts: WorkerFacts): WorkerStatus => ({address: null, id: facts.id, last_seen: 0, resources: {arch: facts.arch, cpu_count: 4, gpus: facts.gpus.map((g, index) => ({...g, index, memory_free_bytes: g.memory_total_bytes, uuid: `GPU-${index}`})), memory_free_bytes: facts.memoryTotalBytes, memory_total_bytes: facts.memoryTotalBytes, platform: facts.platform}, state: 'ready', version: ''})
    expect(workerFacts(status(gpu))).to.deep.equal(gpu)
    const candidates = [cpu, gpu].map((facts) => ({models: 0, status: status(facts), worker: facts.id}))
    const engine = {...gpuOnly, formats: ['pytorch'], modelTypes: ['LLM'], name: 'gpu-engine', parameters: {}}
    expect(ableCandidates(engine, {modelName: 'm', spec: spec('7')}, candidates).map(({worker}) => worker)).to.deep.equal(['gpu-box'])
    try {
      ableCandidates(engine, {modelName: 'm', spec: spec('7')}, candidates.slice(0, 1))
      expect.fail('expected a refusal')
    } catch (error) {
      expect(error).to.be.instanceOf(ServiceError)
      expect(error).to.include({message: "gpu-engine cannot run m's pytorch spec here: it needs an NVIDIA GPU.", param: 'model_engine', status: 400})
    }
  })

  it("asks an engine about each worker's machine (its platform, devices, Python): available when one can run it, else why for each", async () => {
    const mlx = {availability: (worker?: WorkerFacts) => mlxAvailability(worker?.platform, worker?.arch), name: 'MLX'}
    const mac: WorkerFacts = {arch: 'arm64', gpus: [], id: 'mac', memoryTotalBytes: 32 * GIB, platform: 'darwin'}
    const onMachines = async (engine: Parameters<typeof machineFits>[0], workers: WorkerFacts[]) => anyMachine(await machineFits(engine, workers), workers)
    expect(await onMachines(mlx, [cpu, mac])).to.equal(true)
    expect(await onMachines(mlx, [cpu])).to.match(/^MLX runs only on Apple silicon Macs \(macOS on arm64\), and this machine is linux on x64;/)
    expect(await onMachines(mlx, [cpu, gpu])).to.match(/^worker cpu-box: MLX runs only .* worker gpu-box: MLX runs only /)
    expect(await onMachines({name: 'none'}, [])).to.equal('no worker answers.')
    // An engine that runs Python needs one on the worker; SGLang also a recent one.
    const sglang = {availability: (worker?: WorkerFacts) => sglangAvailability(worker?.platform, (worker?.gpus.length ?? 0) > 0, worker?.python), name: 'sglang', python: {packages: ['sglang']}}
    expect(await onMachines(sglang, [{...gpu, python: '3.12.3'}])).to.equal(true)
    expect(await onMachines(sglang, [{...gpu, python: null}])).to.contain('sglang runs Python in a virtual environment, and no Python interpreter was found on the worker')
    expect(await onMachines(sglang, [{...gpu, python: '3.10.12'}])).to.contain("SGLang needs Python 3.11 or later, and the worker's Python is 3.10.12")
    expect(await onMachines(sglang, [{...cpu, python: '3.12.3'}])).to.contain('SGLang needs Linux with an NVIDIA GPU')

    // A spec is judged only on the workers whose machine the engine runs on; the others say why not.
    const spec7 = {modelName: 'm', spec: spec('7')}
    const machines = await machineFits(sglang, [{...cpu, python: '3.12.3'}, {...gpu, memoryTotalBytes: 0, gpus: [{memory_total_bytes: 8 * GIB, name: 'small'}], python: '3.12.3'}])
    expect(fitOnWorkers({}, spec7, [cpu, {...gpu, gpus: [{memory_total_bytes: 8 * GIB, name: 'small'}], memoryTotalBytes: 0}], machines)).to.match(/^worker cpu-box: SGLang needs Linux with an NVIDIA GPU.* worker gpu-box: its 7B weights take about 13\.0 GiB, more than the 8\.0 GiB of memory and GPU memory the worker has/)
  })
})
