/**
 * The engine table tells the truth on this CPU machine (a real `service-local`, `servicectl` and HTTP): vLLM's CPU
 * build cannot run tiny-random-llm's random-weight pytorch spec, so that pair is listed unavailable with the reason
 * while llama.cpp and transformers are available; weights larger than the machine's memory are unavailable with
 * every engine; and launching an unavailable pair is refused at once with the table's reason, nothing installed.
 */
import {expect} from 'chai'
import {existsSync} from 'node:fs'
import {readdir} from 'node:fs/promises'
import {join} from 'node:path'

import {callApi, type RunningService, servicectl, startService, temporaryDirectory} from '../helpers/service.js'

const HUGE = 'huge-llm'

describe('engine table: what the workers can run (service-local on a CPU machine)', function () {
  this.timeout(120_000)
  let service: RunningService
  let environments: string
  const cli = (args: string[]) => servicectl(args, {env: {SERVICE_ENDPOINT: service.url}})
  const nothingInstalled = async () => expect(existsSync(environments) ? await readdir(environments) : []).to.deep.equal([])

  before(async function () {
    // vLLM's CUDA build has other kernels: on a GPU machine its CPU limits are not the subject.
    if (existsSync('/proc/driver/nvidia/version')) this.skip()
    environments = join(await temporaryDirectory(), 'virtualenv')
    service = await startService({env: {SERVICE_VIRTUALENV_DIR: environments}})
    // 2000 billion parameters: no quantization of them fits in any machine these tests run on.
    const source = (format: string, quantizations: string[]) => ({model_format: format, model_size_in_billions: 2000, model_src: {huggingface: {model_id: `org/${HUGE}-${format}`, quantizations, ...(format === 'ggufv2' ? {model_file_name_template: 'm-{quantization}.gguf'} : {})}}})
    const family = {context_length: 2048, model_ability: ['chat'], model_name: HUGE, model_specs: [source('pytorch', ['none']), source('ggufv2', ['q4_k_m'])]}
    expect((await callApi(service, 'POST', '/v1/model_registrations/LLM', {model: family, persist: false})).status).to.equal(200)
  })

  after(async () => service?.stop())

  it("lists vLLM unavailable for tiny-random-llm's pytorch spec with its CPU build's reason, llama.cpp and transformers available", async () => {
    const {exitCode, stderr, stdout} = await cli(['engine', '-n', 'tiny-random-llm'])
    expect(exitCode, stderr).to.equal(0)
    expect(stdout.split('\n')[0]).to.match(/^Name\s+Engine\s+Format\s+Size \(in billions\)\s+Quantization\s+Available$/)
    expect(stdout).to.match(/tiny-random-llm\s+vllm\s+pytorch\s+\S+\s+none\s+no$/m)
    expect(stdout).to.match(/tiny-random-llm\s+transformers\s+pytorch\s+\S+\s+none\s+yes$/m)
    expect(stdout).to.match(/tiny-random-llm\s+llama.cpp\s+ggufv2\s+\S+\s+\S+\s+yes$/m)
    expect(stderr).to.match(/^Unavailable here: vllm pytorch \S+ \(none\): vLLM's CPU build cannot run tiny-random-llm's pytorch spec/m)

    const json = await cli(['engine', '-n', 'tiny-random-llm', '--model-engine', 'vllm', '--json'])
    const [row] = JSON.parse(json.stdout)
    expect(row).to.include({available: false, engine: 'vllm', format: 'pytorch'})

    const {body} = await callApi(service, 'GET', '/v1/engines/tiny-random-llm')
    expect(row.reason).to.equal(body.vllm[0].reason)
    expect(body.vllm).to.have.length(1)
    expect(body.vllm[0]).to.include({available: false, model_format: 'pytorch'})
    expect(body.vllm[0].reason).to.contain("vLLM's CPU build").and.to.contain('--model-engine transformers')
    for (const engine of ['llama.cpp', 'transformers']) for (const group of body[engine]) expect(group, engine).to.include({available: true}).and.not.to.have.property('reason')
    // Xinference's path with the model type answers the same.
    expect((await callApi(service, 'GET', '/v1/engines/LLM/tiny-random-llm')).body.vllm).to.deep.equal(body.vllm)
  })

  it('refuses a launch of that pair at once with the same reason, naming model_engine, before any environment is made', async () => {
    const {body: table} = await callApi(service, 'GET', '/v1/engines/tiny-random-llm')
    const started = Date.now()
    const {body, status} = await callApi(service, 'POST', '/v1/models', {model_engine: 'vllm', model_format: 'pytorch', model_name: 'tiny-random-llm', model_uid: 'tiny-on-vllm'})
    expect(status, JSON.stringify(body)).to.equal(400)
    expect(Date.now() - started).to.be.below(5000)
    expect(body.error.param).to.equal('model_engine')
    expect(body.error.message).to.equal(`vllm cannot run tiny-random-llm's pytorch spec here: ${table.vllm[0].reason}`)
    await nothingInstalled()
  })

  it('lists weights larger than the machine has as unavailable with every engine, and refuses their launch', async () => {
    const {body} = await callApi(service, 'GET', '/v1/engines/huge-llm')
    for (const engine of ['llama.cpp', 'transformers', 'vllm'])
      for (const group of body[engine]) {
        expect(group, engine).to.include({available: false})
        expect(group.reason, engine).to.match(/^its 2000B .*weights take about \d+\.\d GiB, more than the \d+\.\d GiB of memory the worker has; choose a smaller size or quantization\.$/)
      }

    const {exitCode, stderr, stdout} = await cli(['engine', '-n', HUGE, '--model-engine', 'llama.cpp'])
    expect(exitCode, stderr).to.equal(0)
    expect(stdout).to.match(/huge-llm\s+llama.cpp\s+ggufv2\s+2000\s+q4_k_m\s+no$/m)
    expect(stderr).to.contain('Unavailable here: llama.cpp ggufv2 2000 (q4_k_m): its 2000B q4_k_m weights take about')

    const launched = await cli(['launch', '-n', HUGE, '--model-engine', 'llama.cpp', '-f', 'ggufv2', '-s', '2000'])
    expect(launched.exitCode).to.equal(1)
    expect(launched.stderr.trim()).to.match(/^Error: llama.cpp cannot run huge-llm's ggufv2 spec here: its 2000B q4_k_m weights take about/)
    await nothingInstalled()
  })
})
