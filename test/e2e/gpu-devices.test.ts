/**
 * GPUs on a real `service-local` whose PATH has a stand-in `nvidia-smi` (a shell script printing canned CSV, as the
 * real one prints for `--query-gpu=… --format=csv,noheader,nounits`): the worker reports them, launches asking for
 * GPUs get them (seen in the model process's own environment) or a clear refusal. The CPU build of llama.cpp
 * ignores CUDA_VISIBLE_DEVICES, so the models still run.
 */
import {expect} from 'chai'
import {chmod, readFile, writeFile} from 'node:fs/promises'
import {delimiter, join} from 'node:path'

import {callApi, type RunningService, servicectl, startService, temporaryDirectory} from '../helpers/service.js'

const FAKE_NVIDIA_SMI = `#!/bin/sh
# Answers only the query the service makes, as nvidia-smi does with these flags.
case "$*" in
  *--query-gpu=index,name,memory.total,memory.used,uuid*--format=csv,noheader,nounits*)
    echo "0, NVIDIA H100 80GB HBM3, 81559, 1024, GPU-11111111-2222-3333-4444-555555555555"
    echo "1, NVIDIA H100 80GB HBM3, 81559, 0, GPU-66666666-7777-8888-9999-000000000000" ;;
  *) echo "unexpected arguments: $*" >&2; exit 2 ;;
esac
`

/** The environment a process started with, from /proc. */
async function environmentOf(pid: number): Promise<Record<string, string>> {
  const raw = await readFile(`/proc/${pid}/environ`, 'utf8')
  return Object.fromEntries(raw.split('\0').filter(Boolean).map((entry) => [entry.slice(0, entry.indexOf('=')), entry.slice(entry.indexOf('=') + 1)]))
}

describe('GPU discovery and placement (service-local with a stand-in nvidia-smi)', function () {
  let service: RunningService
  const launch = (body: Record<string, unknown>) => callApi(service, 'POST', '/v1/models', {model_engine: 'llama.cpp', model_name: 'tiny-random-llm', n_threads: 1, ...body})
  const pidOf = async (uid: string) => (await callApi(service, 'GET', `/v1/models/${uid}`)).body.pid as number

  before(async () => {
    const bin = await temporaryDirectory('fake-nvidia-smi-')
    await writeFile(join(bin, 'nvidia-smi'), FAKE_NVIDIA_SMI)
    await chmod(join(bin, 'nvidia-smi'), 0o755)
    service = await startService({env: {PATH: `${bin}${delimiter}${process.env.PATH}`}})
  })

  after(async () => service?.stop())

  it("reports the worker's GPUs with their memory", async () => {
    const {body} = await callApi(service, 'GET', '/v1/cluster/workers')
    expect(body.list[0].resources.gpus).to.deep.equal([
      {index: 0, memory_free_bytes: (81559 - 1024) * 1024 ** 2, memory_total_bytes: 81559 * 1024 ** 2, name: 'NVIDIA H100 80GB HBM3', uuid: 'GPU-11111111-2222-3333-4444-555555555555'},
      {index: 1, memory_free_bytes: 81559 * 1024 ** 2, memory_total_bytes: 81559 * 1024 ** 2, name: 'NVIDIA H100 80GB HBM3', uuid: 'GPU-66666666-7777-8888-9999-000000000000'},
    ])
  })

  it('starts a launch with gpu_idx with CUDA_VISIBLE_DEVICES in its model process, and gives n_gpu the GPU left', async () => {
    const first = await launch({gpu_idx: [1], model_uid: 'on-gpu-1'})
    expect(first.status, JSON.stringify(first.body)).to.equal(200)
    expect(await environmentOf(await pidOf('on-gpu-1'))).to.include({CUDA_DEVICE_ORDER: 'PCI_BUS_ID', CUDA_VISIBLE_DEVICES: '1'})

    const second = await launch({model_uid: 'one-gpu', n_gpu: 1})
    expect(second.status, JSON.stringify(second.body)).to.equal(200)
    expect(await environmentOf(await pidOf('one-gpu'))).to.include({CUDA_VISIBLE_DEVICES: '0'})

    // A launch that asks for no GPU of its own sees every GPU, as before.
    expect((await launch({model_uid: 'shared'})).status).to.equal(200)
    expect(await environmentOf(await pidOf('shared'))).to.not.have.property('CUDA_VISIBLE_DEVICES')
  })

  it('refuses more GPUs than the worker has with a 400, and a GPU in use with a 503 naming its model', async () => {
    const tooMany = await launch({model_uid: 'greedy', n_gpu: 3})
    expect(tooMany.status).to.equal(400)
    expect(tooMany.body.error).to.include({message: 'n_gpu 3 asks for more GPUs than worker local has (2 GPUs).', param: 'n_gpu'})
    const unknown = await launch({gpu_idx: 7, model_uid: 'nowhere'})
    expect(unknown.status).to.equal(400)
    expect(unknown.body.error).to.include({message: 'gpu_idx names GPU 7, which worker local does not have; its GPUs: 0, 1.', param: 'gpu_idx'})
    const busy = await launch({gpu_idx: [1], model_uid: 'also-gpu-1'})
    expect(busy.status).to.equal(503)
    expect(busy.body.error.message).to.match(/GPU 1 runs on-gpu-1/)
    expect((await callApi(service, 'GET', '/v1/models')).body.data.map((model: {id: string}) => model.id)).to.have.members(['on-gpu-1', 'one-gpu', 'shared'])
  })

  it('gives a GPU again once the model holding it is terminated', async () => {
    expect((await callApi(service, 'DELETE', '/v1/models/on-gpu-1')).status).to.equal(200)
    const again = await launch({gpu_idx: [1], model_uid: 'gpu-1-again'})
    expect(again.status, JSON.stringify(again.body)).to.equal(200)
    expect(await environmentOf(await pidOf('gpu-1-again'))).to.include({CUDA_VISIBLE_DEVICES: '1'})
  })

  it('takes --gpu-idx from servicectl launch, and refuses indices it cannot read', async () => {
    expect((await callApi(service, 'DELETE', '/v1/models/one-gpu')).status).to.equal(200)
    const cli = (args: string[]) => servicectl(args, {env: {SERVICE_ENDPOINT: service.url}})
    const launched = await cli(['launch', '-n', 'tiny-random-llm', '--model-engine', 'llama.cpp', '-u', 'cli-gpu', '--gpu-idx', '0', '--n_threads', '1'])
    expect(launched.exitCode, launched.stderr).to.equal(0)
    expect(await environmentOf(await pidOf('cli-gpu'))).to.include({CUDA_VISIBLE_DEVICES: '0'})
    const wrong = await cli(['launch', '-n', 'tiny-random-llm', '--gpu-idx', 'first'])
    expect(wrong.exitCode).to.equal(2)
    expect(wrong.stderr).to.match(/Expected GPU indices such as 0 or 0,1 but received: first/)
  })
})
