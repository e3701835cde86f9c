/**
 * The vLLM, SGLang and MLX engine plugins in a real `service-local`, driven by `servicectl` and HTTP: the engine
 * matrix of a catalogue model, `vllm-models`, launches refused with the engines that can run the spec, and the
 * engines that cannot run on this machine saying why (this machine has no GPU: SGLang and MLX cannot run here).
 */
import {expect} from 'chai'
import {existsSync} from 'node:fs'

import {callApi, type RunningService, servicectl, startService} from '../helpers/service.js'

/** SGLang can run only where the NVIDIA driver is loaded; these tests say what the engines do on either kind of machine. */
const NVIDIA_GPU = existsSync('/proc/driver/nvidia/version')

describe('Python engines: vLLM, SGLang, MLX (service-local, servicectl)', function () {
  let service: RunningService
  const cli = (args: string[]) => servicectl(args, {env: {SERVICE_ENDPOINT: service.url}})

  before(async () => {
    service = await startService()
  })

  after(async () => service?.stop())

  it('shows every engine × format × size × quantization of qwen2.5-instruct, and the engines that cannot run here with why', async () => {
    const {exitCode, stderr, stdout} = await cli(['engine', '-n', 'qwen2.5-instruct', '-s', '7'])
    expect(exitCode, stderr).to.equal(0)
    for (const row of [
      /qwen2.5-instruct\s+llama.cpp\s+ggufv2\s+7\s+q4_k_m/,
      /qwen2.5-instruct\s+vllm\s+pytorch\s+7\s+none/,
      /qwen2.5-instruct\s+vllm\s+awq\s+7\s+Int4/,
      /qwen2.5-instruct\s+vllm\s+gptq\s+7\s+Int4/,
      /qwen2.5-instruct\s+vllm\s+gptq\s+7\s+Int8/,
    ])
      expect(stdout).to.match(row)
    expect(stdout).not.to.match(/\sMLX\s/)
    if (NVIDIA_GPU) expect(stdout).to.match(/qwen2.5-instruct\s+sglang\s+awq\s+7\s+Int4/)
    else expect(stderr).to.contain('Unavailable here: sglang: SGLang needs Linux with an NVIDIA GPU')
    expect(stderr).to.contain('Unavailable here: MLX: MLX runs only on Apple silicon Macs (macOS on arm64)')

    const {body} = await callApi(service, 'GET', '/v1/engines/qwen3')
    expect(body.vllm.map((group: {model_format: string}) => group.model_format)).to.include.members(['pytorch', 'fp8', 'awq'])
  })

  it('leaves out the engines that run none of a model\'s formats, available here or not', async () => {
    const family = {model_ability: ['chat'], model_name: 'gguf-only', model_specs: [{model_format: 'ggufv2', model_size_in_billions: 1, model_src: {huggingface: {model_file_name_template: 'm-{quantization}.gguf', model_id: 'org/m-GGUF', quantizations: ['q4_0']}}}]}
    expect((await callApi(service, 'POST', '/v1/model_registrations/LLM', {model: family, persist: false})).status).to.equal(200)
    const {exitCode, stderr, stdout} = await cli(['engine', '-n', 'gguf-only'])
    expect(exitCode, stderr).to.equal(0)
    expect(stdout).to.match(/gguf-only\s+llama.cpp\s+ggufv2\s+1\s+q4_0/)
    expect(stderr).not.to.contain('Unavailable here')
    expect(Object.keys((await callApi(service, 'GET', '/v1/engines/gguf-only')).body)).to.deep.equal(['llama.cpp'])
  })

  it('refuses a launch whose engine cannot run the spec, naming the field and the engines that can', async () => {
    const launched = await cli(['launch', '-n', 'qwen2.5-instruct', '--model-engine', 'vllm', '-f', 'ggufv2', '-s', '0_5'])
    expect(launched.exitCode).to.equal(1)
    expect(launched.stderr.trim()).to.equal(
      'Error: model_format "ggufv2" is not available for qwen2.5-instruct with engine vllm; choose one of: pytorch, awq, gptq; the engines that can run it: llama.cpp.',
    )

    const {body, status} = await callApi(service, 'POST', '/v1/models', {model_engine: 'llama.cpp', model_format: 'fp8', model_name: 'qwen3'})
    expect(status).to.equal(400)
    expect(body.error).to.include({param: 'model_format'})
    expect(body.error.message).to.match(/the engines that can run it: sglang, vllm\.$/)
  })

  it('refuses an engine that cannot run on this machine (MLX elsewhere than on a Mac, SGLang without a GPU) before downloading anything, saying why', async () => {
    const {body, status} = await callApi(service, 'POST', '/v1/models', {model_engine: 'MLX', model_name: 'qwen2.5-instruct', model_size_in_billions: '0_5'})
    expect(status).to.equal(400)
    expect(body.error).to.include({code: 'unsupported', param: 'model_engine'})
    // Refused as the engine table says it (the worker's own check comes after, for a launch that reaches it).
    expect(body.error.message).to.match(/^MLX cannot run qwen2.5-instruct's mlx spec here: MLX runs only on Apple silicon Macs/)
    // SGLang's PyPI package is built for CUDA, so only a machine with an NVIDIA GPU can run it.
    if (!NVIDIA_GPU) {
      const sglang = await callApi(service, 'POST', '/v1/models', {model_engine: 'sglang', model_format: 'pytorch', model_name: 'qwen2.5-instruct', model_size_in_billions: '0_5'})
      expect(sglang.status).to.equal(400)
      expect(sglang.body.error.message).to.match(/^sglang cannot run qwen2.5-instruct's pytorch spec here: SGLang needs Linux with an NVIDIA GPU: its PyPI package is built for CUDA, and this Linux machine has no NVIDIA GPU/)
    }

    expect((await callApi(service, 'GET', '/v1/cache/models')).body.list).to.deep.equal([])
  })

  it('lists the LLM families vLLM can serve with `servicectl vllm-models`, as Xinference does', async () => {
    const {exitCode, stdout} = await cli(['vllm-models'])
    expect(exitCode).to.equal(0)
    const [chat, generate] = stdout.trim().split('\n')
    expect(chat).to.match(/^VLLM supported chat model families: /)
    for (const family of ['deepseek-r1-distill-qwen', 'llama-3.2-instruct', 'qwen2.5-instruct', 'qwen3']) expect(chat).to.contain(family)
    expect(generate).to.match(/^VLLM supported generate model families: /)
    const json = JSON.parse((await cli(['vllm-models', '--json'])).stdout)
    expect(json.chat).to.include('qwen2.5-instruct')
    expect(json).to.deep.equal((await callApi(service, 'GET', '/v1/models/vllm-supported')).body)
  })
})
