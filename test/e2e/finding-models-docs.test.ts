/**
 * The examples of docs/finding-models.md, run as written against a real service whose hub (HF_ENDPOINT) is the local
 * one (test/helpers/fake-hub.ts), serving a random llama GGUF under the file names of Qwen's real repository.
 */
import {expect} from 'chai'
import {execa} from 'execa'
import {chmod, mkdir, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import {writeRandomLlamaGguf} from '../../plugins/engine-llama-cpp/src/gguf/random-llama.js'
import {FakeHub} from '../helpers/fake-hub.js'
import {readmeBlock} from '../helpers/readme.js'
import {ROOT, type RunningService, startService, temporaryDirectory} from '../helpers/service.js'

const PAGE = 'docs/finding-models.md'
const REPO = 'Qwen/Qwen2.5-0.5B-Instruct-GGUF'

describe('docs/finding-models.md examples', function () {
  let hub: FakeHub
  let service: RunningService
  let directory: string
  let env: Record<string, string>
  const run = async (marker: string) => {
    const script = (await readmeBlock(marker, PAGE)).replaceAll('http://127.0.0.1:9997', service.url)
    const result = await execa('bash', ['-euo', 'pipefail', '-c', script], {cwd: directory, env: {...env, NO_COLOR: '1'}, reject: false})
    expect(result.exitCode, `${marker}: ${result.stderr}`).to.equal(0)
    return result.stdout
  }

  before(async () => {
    directory = await temporaryDirectory()
    const tiny = join(directory, 'tiny.gguf')
    await writeRandomLlamaGguf(tiny)
    hub = await FakeHub.start()
    await hub.addRepo(REPO, {'qwen2.5-0.5b-instruct-q4_k_m.gguf': tiny, 'qwen2.5-0.5b-instruct-q8_0.gguf': tiny})
    service = await startService({env: {HF_ENDPOINT: hub.url}})
    const bin = join(directory, 'bin')
    await mkdir(bin)
    await writeFile(join(bin, 'servicectl'), `#!/bin/sh\nexec node ${join(ROOT, 'bin/servicectl.js')} "$@"\n`)
    await chmod(join(bin, 'servicectl'), 0o755)
    env = {PATH: `${bin}:${process.env.PATH}`, SERVICE_ENDPOINT: service.url}
  })

  after(async () => {
    await service?.stop()
    await hub?.stop()
  })

  it('searches the catalogue, and the hub with --hub', async () => {
    const output = await run('search')
    expect(output).to.match(/^LLM\s+tiny-random-llm\s+0_0001\s+f32\s+fits: [\d.]+ MB at 0_0001B ggufv2 f32\s+catalogue$/m)
    expect(output).to.match(/^LLM\s+hf\.co\/Qwen\/Qwen2\.5-0\.5B-Instruct-GGUF\s+0_5\s+Q4_K_M, Q8_0\s+huggingface$/m)
  })

  it('launches a catalogue model, and a hub model by name that then chats by that name, from the CLI and the API', async () => {
    expect(await run('catalogue-launch')).to.equal('Model uid: tiny-random-llm\nTerminated tiny-random-llm.')
    const [launched, answer] = (await run('hub-launch')).split('\n')
    expect(launched).to.equal('Model uid: Qwen--Qwen2.5-0.5B-Instruct-GGUF--Q4_K_M')
    expect(JSON.parse(answer).choices[0].message.role).to.equal('assistant')
    expect(JSON.parse(await run('hub-launch-api'))).to.deep.equal({model_uid: 'qwen-q8'})
    const missing = await fetch(`${service.url}/v1/models`, {body: JSON.stringify({model_name: `hf.co/${REPO}:Q3_K_S`}), headers: {'content-type': 'application/json'}, method: 'POST'})
    expect((await missing.json()).error.message).to.equal('hf.co/qwen/qwen2.5-0.5b-instruct-gguf has no quantization "Q3_K_S"; it has: Q4_K_M, Q8_0.')
  })
})
