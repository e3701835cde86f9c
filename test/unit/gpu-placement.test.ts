import {expect} from 'chai'

import type {GpuDevice} from '../../src/protocol/worker.js'

import {discoverGpus, NVIDIA_SMI_QUERY, parseNvidiaSmi} from '../../src/cluster/devices.js'
import {gpuEnvironment} from '../../src/kernel/devices.js'
import {assignGpus, assignReplicaGpus, gpuCandidates, type GpuHolder, gpuMemoryCandidates} from '../../src/cluster/gpu-placement.js'

const quiet = {debug() {}, error() {}, info() {}, warn() {}}
const MIB = 1024 ** 2
const CSV = `0, NVIDIA H100 80GB HBM3, 81559, 1024, GPU-aaaa
1, NVIDIA H100 80GB HBM3, 81559, 0, GPU-bbbb
`
const gpu = (index: number): GpuDevice => ({index, memory_free_bytes: 80 * 1024 * MIB, memory_total_bytes: 80 * 1024 * MIB, name: 'H100', uuid: `GPU-${index}`})
const twoGpus = [gpu(0), gpu(1)]
const none = new Map<number, string>()
const refusal = (run: () => unknown) => {
  try {
    run()
  } catch (error) {
    return error as {status: number; param: string; message: string}
  }

  return expect.fail('expected a refusal')
}

describe('device discovery', () => {
  it('reads GPUs from nvidia-smi CSV, free memory being total less used', async () => {
    let asked: string[] = []
    const gpus = await discoverGpus(quiet, async (program, args) => ((asked = [program, ...args]), CSV))
    expect(asked).to.deep.equal(['nvidia-smi', ...NVIDIA_SMI_QUERY])
    expect(gpus).to.deep.equal([
      {index: 0, memory_free_bytes: (81559 - 1024) * MIB, memory_total_bytes: 81559 * MIB, name: 'NVIDIA H100 80GB HBM3', uuid: 'GPU-aaaa'},
      {index: 1, memory_free_bytes: 81559 * MIB, memory_total_bytes: 81559 * MIB, name: 'NVIDIA H100 80GB HBM3', uuid: 'GPU-bbbb'},
    ])
  })

  it('finds no GPUs when nvidia-smi is missing or fails, and skips lines it cannot read', async () => {
    expect(await discoverGpus(quiet, async () => Promise.reject(Object.assign(new Error('spawn nvidia-smi ENOENT'), {code: 'ENOENT'})))).to.deep.equal([])
    expect(parseNvidiaSmi('NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver.\n')).to.deep.equal([])
    expect(parseNvidiaSmi('0, GPU, [N/A], 0, GPU-x\n1, GPU, 100, 50, GPU-y')).to.have.length(1)
  })

  it('limits a model process to its GPUs, numbered as nvidia-smi numbers them', () => {
    expect(gpuEnvironment([1, 3])).to.deep.equal({CUDA_DEVICE_ORDER: 'PCI_BUS_ID', CUDA_VISIBLE_DEVICES: '1,3'})
    expect(gpuEnvironment([])).to.deep.equal({CUDA_DEVICE_ORDER: 'PCI_BUS_ID', CUDA_VISIBLE_DEVICES: ''})
    expect(gpuEnvironment(undefined)).to.deep.equal({})
  })
})

describe('GPU placement', () => {
  it('gives nothing of its own to a launch that asks for no GPUs', () => {
    expect(assignGpus({}, twoGpus, none, 'w')).to.equal(undefined)
    expect(assignGpus({gpu_idx: null, n_gpu: null}, twoGpus, none, 'w')).to.equal(undefined)
  })

  it('gives the free GPUs n_gpu asks for, lowest index first, and every free one for auto', () => {
    expect(assignGpus({n_gpu: 1}, twoGpus, new Map([[0, 'other']]), 'w')).to.deep.equal([1])
    expect(assignGpus({n_gpu: 2}, twoGpus, none, 'w')).to.deep.equal([0, 1])
    expect(assignGpus({n_gpu: 0}, twoGpus, none, 'w')).to.deep.equal([])
    expect(assignGpus({n_gpu: 'auto'}, twoGpus, new Map([[1, 'other']]), 'w')).to.deep.equal([0])
    // A machine without GPUs runs an `auto` launch on its CPU, as Xinference does.
    expect(assignGpus({n_gpu: 'auto'}, [], none, 'w')).to.equal(undefined)
  })

  it('gives exactly the GPUs gpu_idx names', () => {
    expect(assignGpus({gpu_idx: [1]}, twoGpus, none, 'w')).to.deep.equal([1])
    expect(assignGpus({gpu_idx: 0, n_gpu: 'auto'}, twoGpus, new Map([[1, 'other']]), 'w')).to.deep.equal([0])
  })

  it('refuses with a 400 what the worker can never give, naming the field', () => {
    const tooMany = refusal(() => assignGpus({n_gpu: 3}, twoGpus, none, 'local'))
    expect(tooMany).to.include({param: 'n_gpu', status: 400})
    expect(tooMany.message).to.equal('n_gpu 3 asks for more GPUs than worker local has (2 GPUs).')
    expect(refusal(() => assignGpus({n_gpu: 1}, [], none, 'local')).message).to.equal('n_gpu 1 asks for more GPUs than worker local has (0 GPUs).')
    const unknown = refusal(() => assignGpus({gpu_idx: [1, 4]}, twoGpus, none, 'local'))
    expect(unknown).to.include({param: 'gpu_idx', status: 400})
    expect(unknown.message).to.equal('gpu_idx names GPU 4, which worker local does not have; its GPUs: 0, 1.')
    expect(refusal(() => assignGpus({gpu_idx: [0], n_gpu: 2}, twoGpus, none, 'local'))).to.include({param: 'n_gpu', status: 400})
  })

  it('refuses with a 503 naming the holder a GPU another model has', () => {
    const taken = new Map([[1, 'big-model']])
    const busy = refusal(() => assignGpus({gpu_idx: [1]}, twoGpus, taken, 'local'))
    expect(busy).to.include({param: 'gpu_idx', status: 503})
    expect(busy.message).to.match(/GPU 1 runs big-model/)
    expect(refusal(() => assignGpus({n_gpu: 2}, twoGpus, taken, 'local'))).to.include({param: 'n_gpu', status: 503})
    expect(refusal(() => assignGpus({n_gpu: 'auto'}, twoGpus, new Map([[0, 'a'], [1, 'b']]), 'local'))).to.include({param: 'n_gpu', status: 503})
  })

  it('narrows the candidate workers to those that can give the GPUs, else says why the first cannot', () => {
    const holders: Record<string, GpuHolder> = {cpu: {gpus: [], id: 'cpu', taken: none}, gpu: {gpus: twoGpus, id: 'gpu', taken: none}}
    expect(gpuCandidates({n_gpu: 2}, ['cpu', 'gpu'], (id) => holders[id])).to.deep.equal(['gpu'])
    expect(gpuCandidates({}, ['cpu', 'gpu'], (id) => holders[id])).to.deep.equal(['cpu', 'gpu'])
    expect(refusal(() => gpuCandidates({n_gpu: 4}, ['cpu', 'gpu'], (id) => holders[id])).message).to.match(/worker cpu has \(0 GPUs\)/)
  })

  it('gives replicas on one worker GPUs of their own', () => {
    const holder = (): GpuHolder => ({gpus: twoGpus, id: 'gpu', taken: none})
    expect(assignReplicaGpus({n_gpu: 1}, ['gpu', 'gpu'], holder, 'm')).to.deep.equal([[0], [1]])
    expect(refusal(() => assignReplicaGpus({n_gpu: 1}, ['gpu', 'gpu', 'gpu'], holder, 'm')).message).to.match(/GPU 0 runs m; GPU 1 runs m/)
  })

  it('keeps the workers with a GPU as large as a model card asks, in decimal gigabytes, else refuses saying what each has', () => {
    const h100 = {...gpu(0), memory_total_bytes: 81_559 * MIB, name: 'NVIDIA H100 80GB HBM3'}
    const worker = (id: string, gpus: GpuDevice[]) => ({models: 0, status: {id, resources: {gpus}} as never, worker: id})
    const cluster = [worker('cpu', []), worker('h100', [h100])]
    expect(gpuMemoryCandidates(80, cluster, 'wan-14b').map((candidate) => candidate.worker)).to.deep.equal(['h100'])
    expect(gpuMemoryCandidates(undefined, cluster, 'm')).to.equal(cluster)
    expect(gpuMemoryCandidates('80', cluster, 'm')).to.equal(cluster)
    const refused = refusal(() => gpuMemoryCandidates(96, cluster, 'wan-14b'))
    expect(refused).to.include({param: 'model_name', status: 400})
    expect(refused.message).to.equal(
      'wan-14b needs a GPU with 96 GB of memory (min_gpu_memory_gb); worker cpu has no CUDA GPU; the largest GPU of worker h100, NVIDIA H100 80GB HBM3, has 85 GB. Launch it on a worker with one.',
    )
  })
})
