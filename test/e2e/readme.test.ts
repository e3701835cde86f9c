/**
 * The README's examples are run as written: the quickstart shell block with `servicectl` on PATH, the
 * OpenAI client example with node, and the catalogue block against a local hub that serves a generated model
 * under the real repo and file names. Only the model path, the port and HF_ENDPOINT differ from what a
 * reader runs.
 */
import {expect} from 'chai'
import {execa} from 'execa'
import {chmod, mkdir, readFile, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import {FakeHub} from '../helpers/fake-hub.js'
import {writeTestLlamaGguf} from '../helpers/gguf/models.js'
import {ROOT, type RunningService, startService, temporaryDirectory} from '../helpers/service.js'

async function readmeBlock(marker: string): Promise<string> {
  const readme = await readFile(join(ROOT, 'README.md'), 'utf8')
  const match = new RegExp(`<!-- tested: ${marker} -->\\n\`\`\`\\w+\\n([\\s\\S]*?)\\n\`\`\``).exec(readme)
  if (!match) throw new Error(`README.md has no block marked "tested: ${marker}"`)
  return match[1]
}

describe('README examples', () => {
  let service: RunningService
  let directory: string
  let env: Record<string, string>

  before(async () => {
    directory = await temporaryDirectory()
    service = await startService()
    const bin = join(directory, 'bin')
    await mkdir(bin)
    await writeFile(join(bin, 'servicectl'), `#!/bin/sh\nexec node ${join(ROOT, 'bin/servicectl.js')} "$@"\n`)
    await chmod(join(bin, 'servicectl'), 0o755)
    env = {PATH: `${bin}:${process.env.PATH}`, SERVICE_ENDPOINT: service.url}
  })

  after(async () => service?.stop())

  it('runs the quickstart and the OpenAI client example as written', async () => {
    const model = join(directory, 'model.gguf')
    await writeTestLlamaGguf(model)
    const script = (await readmeBlock('quickstart')).replace('/path/to/model.gguf', model)
    const lines = script.split('\n')
    const terminate = lines.pop()!
    expect(terminate).to.match(/^servicectl terminate/)

    const quickstart = await execa('bash', ['-euo', 'pipefail', '-c', lines.join('\n')], {cwd: directory, env, reject: false})
    expect(quickstart.exitCode, quickstart.stderr).to.equal(0)
    expect(quickstart.stdout).to.contain('Registered my-model (LLM).')
    expect(quickstart.stdout).to.contain('Model uid: my-model')
    expect(quickstart.stdout).to.match(/my-model\s+LLM\s+my-model\s+llama.cpp\s+ggufv2\s+0_5\s+q4_0\s+ready/)
    expect(quickstart.stdout).to.match(/Assistant: \S/)
    expect(quickstart.stdout).to.match(/Completion: \S/)

    const example = (await readmeBlock('openai-client')).replace('http://127.0.0.1:9997', service.url)
    const client = await execa('node', ['--input-type=module', '-e', example], {cwd: ROOT, reject: false})
    expect(client.exitCode, client.stderr).to.equal(0)
    expect(client.stdout.length).to.be.greaterThan(0)

    const stopped = await execa('bash', ['-euo', 'pipefail', '-c', terminate], {cwd: directory, env, reject: false})
    expect(stopped.stdout).to.contain('Terminated my-model.')
  })

  it('runs the catalogue block: download on launch, cached, cal-model-mem, chat, terminate, remove-cache', async () => {
    const model = join(directory, 'catalogue.gguf')
    await writeTestLlamaGguf(model)
    const hub = await FakeHub.start()
    await hub.addRepo('Qwen/Qwen2.5-0.5B-Instruct-GGUF', {'qwen2.5-0.5b-instruct-q4_k_m.gguf': model})
    const catalogue = await startService({env: {HF_ENDPOINT: hub.url}})
    try {
      const script = await readmeBlock('catalogue')
      const run = await execa('bash', ['-euo', 'pipefail', '-c', script], {cwd: directory, env: {...env, SERVICE_ENDPOINT: catalogue.url}, reject: false})
      expect(run.exitCode, run.stderr).to.equal(0)
      expect(run.stderr).to.contain('Downloading qwen2.5-0.5b-instruct-q4_k_m.gguf')
      expect(run.stdout).to.contain('Model uid: qwen2.5-instruct')
      expect(run.stdout).to.match(/qwen2.5-instruct--0_5B--ggufv2--q4_k_m\s+huggingface\s+Qwen\/Qwen2.5-0.5B-Instruct-GGUF\s+\S+ kB\s+complete\s/)
      expect(run.stdout).to.match(/^Total:\s+\d/m)
      expect(run.stdout).to.match(/Assistant: \S/)
      expect(run.stdout).to.contain('Terminated qwen2.5-instruct.')
      expect(run.stdout).to.contain('Deleted qwen2.5-instruct--0_5B--ggufv2--q4_k_m (2 files).')
      expect(hub.fileRequests('qwen2.5-0.5b-instruct-q4_k_m.gguf')).to.have.length(1)
    } finally {
      await catalogue.stop()
      await hub.stop()
    }
  })
})
