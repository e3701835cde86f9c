/**
 * What the vLLM engine refuses before it makes its environment: specs that are no model folder vLLM loads, heads
 * vLLM's CPU attention does not take (read from a real config.json), and memory the CPU build cannot have at start.
 */
import {expect} from 'chai'
import {mkdir, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import {checkCpuMemory, checkModelFolder, checkSpec, headSize, modelFolder, pythonRefusal} from '../../plugins/engine-vllm/src/launch-checks.js'
import {vllmCanRun, vllmOnWorker} from '../../plugins/engine-vllm/src/register.js'
import {ServiceError} from '../../src/kernel/errors.js'
import {temporaryDirectory} from '../helpers/service.js'

const errors = {
  badRequest: (message: string, param?: string) => new ServiceError(400, 'invalid_request', message, param),
  create: (status: number, code: never, message: string, param?: string) => new ServiceError(status, code, message, param),
  notFound: (message: string) => new ServiceError(404, 'not_found', message),
}
const GIB = 1024 ** 3
const refusal = async (check: () => unknown) => {
  try {
    await check()
  } catch (error) {
    return error as ServiceError
  }

  throw new Error('expected a refusal')
}

const spec = {model_file_name_template: null, model_format: 'pytorch', model_hub: 'huggingface', model_id: 'org/model', quantization_parts: null}

describe('vLLM launch checks (before its environment is made)', () => {
  it('refuses weights made here by another engine and single-file specs, and takes a repository', async () => {
    const generated = await refusal(() => checkSpec({modelName: 'tiny-random-llm', spec: {...spec, model_file_name_template: 'config.json', model_hub: 'generated', quantization_parts: ['config.json']} as never}, errors))
    expect(generated).to.include({param: 'model_engine', status: 400})
    expect(generated.message).to.contain('--model-engine transformers').and.to.contain('llama.cpp')
    const single = await refusal(() => checkSpec({modelName: 'one-file', spec: {...spec, model_file_name_template: 'pytorch_model.bin'} as never}, errors))
    expect(single).to.include({param: 'model_format', status: 400})
    expect(() => checkSpec({modelName: 'repo', spec: spec as never}, errors)).not.to.throw()
  })

  it("refuses the CPU build's memory at start when the machine has less available, and a KV cache larger than what is left", async () => {
    const memory = {availableBytes: 20 * GIB, totalBytes: 23.5 * GIB}
    const byDefault = await refusal(() => checkCpuMemory({}, memory, errors))
    expect(byDefault).to.include({param: 'gpu_memory_utilization', status: 400})
    expect(byDefault.message).to.contain('(0.92, its default)').and.to.contain('21.6 GiB').and.to.contain('--cpu_kvcache_space')
    expect(() => checkCpuMemory({gpu_memory_utilization: 0.8}, memory, errors)).not.to.throw()
    expect(() => checkCpuMemory({cpu_kvcache_space: 4}, memory, errors, 2 * GIB)).not.to.throw()
    const kvCache = await refusal(() => checkCpuMemory({cpu_kvcache_space: 19}, memory, errors, 2 * GIB))
    expect(kvCache).to.include({param: 'cpu_kvcache_space', status: 400})
  })

  it("reads the head size from config.json, and on CPU refuses one vLLM's CPU attention does not take", async () => {
    expect(headSize({hidden_size: 64, num_attention_heads: 4})).to.equal(16)
    expect(headSize({head_dim: 128, hidden_size: 64, num_attention_heads: 4})).to.equal(128)
    expect(headSize({text_config: {hidden_size: 2048, num_attention_heads: 16}})).to.equal(128)

    const folder = await temporaryDirectory('vllm-checks-')
    const missing = await refusal(() => checkModelFolder(folder, {modelName: 'no-config'}, true, errors))
    expect(missing.message).to.contain('config.json')
    await writeFile(join(folder, 'config.json'), JSON.stringify({hidden_size: 64, num_attention_heads: 4}))
    const narrow = await refusal(() => checkModelFolder(folder, {modelName: 'narrow'}, true, errors))
    expect(narrow).to.include({param: 'model_engine', status: 400})
    expect(narrow.message).to.contain('heads are 16 wide').and.to.contain('32, 64, 80')
    // CUDA builds have other kernels: the CPU's limits are not theirs.
    await checkModelFolder(folder, {modelName: 'narrow'}, false, errors)
    await writeFile(join(folder, 'config.json'), JSON.stringify({hidden_size: 256, num_attention_heads: 4}))
    await checkModelFolder(folder, {modelName: 'wide'}, true, errors)

    // vLLM is given the folder, also when the weights resolved to config.json in it.
    await mkdir(join(folder, 'sub'))
    expect(await modelFolder(join(folder, 'config.json'))).to.equal(folder)
    expect(await modelFolder(join(folder, 'sub'))).to.equal(join(folder, 'sub'))
  })

  it('answers the engine table from the same checks: on a CPU worker the random-weight spec cannot run, a repository can', () => {
    const cpu = {arch: 'x64', gpus: [], id: 'local', memoryTotalBytes: 16 * GIB, platform: 'linux'}
    const generated = {modelName: 'tiny-random-llm', spec: {...spec, model_file_name_template: 'config.json', model_hub: 'generated', quantization_parts: ['config.json']} as never}
    const reason = vllmCanRun(generated, cpu)
    expect(reason).to.be.a('string').and.to.contain("vLLM's CPU build cannot run tiny-random-llm's pytorch spec").and.to.contain('--model-engine transformers')
    expect(vllmCanRun(generated, {...cpu, gpus: [{memory_total_bytes: 80 * GIB, name: 'NVIDIA H100'}]})).to.be.a('string').and.not.to.contain('CPU build')
    expect(vllmCanRun({modelName: 'repo', spec: spec as never}, cpu)).to.equal(true)
  })

  it("refuses a worker's Python that vLLM's wheels are not built for", () => {
    expect(pythonRefusal('3.11.7')).to.equal(undefined)
    expect(pythonRefusal('3.14.0')).to.equal(undefined)
    expect(pythonRefusal('3.10.12')).to.contain("vLLM's wheels need Python 3.11 to 3.14, and the worker's Python is 3.10.12")
    expect(pythonRefusal('3.15.0')).to.contain('3.15.0')
    const worker = {arch: 'x64', gpus: [], id: 'w', memoryTotalBytes: 16 * GIB, platform: 'linux'}
    expect(vllmOnWorker({...worker, python: '3.12.3'})).to.equal(true)
    expect(vllmOnWorker({...worker, python: '3.10.12'})).to.contain("the worker's Python is 3.10.12")
    expect(vllmOnWorker({...worker, arch: 'arm64', platform: 'darwin', python: '3.12.3'})).to.contain('this machine is darwin on arm64')
  })
})
