/**
 * The README's examples are run as written: the shell blocks with `servicectl` on PATH, the client examples with
 * node, the access-control config with its login example, and the catalogue block against a local hub that
 * serves a generated model under the real repo and file names. The quickstart's tiny-random-llm is made by the
 * service itself. Only the custom models' paths (generated GGUFs instead of the reader's files), the port,
 * HF_ENDPOINT, the secret (which the reader generates) and the typed client's `npm install` (the repository has those
 * packages) differ from what a reader runs.
 */
import {expect} from 'chai'
import {execa} from 'execa'
import {randomBytes} from 'node:crypto'
import {chmod, mkdir, mkdtemp, readdir, readFile, rm, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import {loadAuthConfig} from '../../src/auth/config.js'
import {writeTestAudio} from '../helpers/audio.js'
import {FakeHub} from '../helpers/fake-hub.js'
import {solidPng} from '../helpers/media.js'
import {writeLinearModel} from '../helpers/onnx-models.js'
import {diffusersServiceEnv} from '../../bench/image-diffusers.js'
import {readmeBlock} from '../helpers/readme.js'
import {writeRandomBertGguf} from '../../plugins/engine-llama-cpp/src/gguf/random-bert.js'
import {writeRandomLlamaGguf} from '../../plugins/engine-llama-cpp/src/gguf/random-llama.js'
import {ROOT, type RunningService, startService, temporaryDirectory} from '../helpers/service.js'

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

  const runNode = async (marker: string) => {
    const example = (await readmeBlock(marker)).replaceAll('http://127.0.0.1:9997', service.url)
    const result = await execa('node', ['--input-type=module', '-e', example], {cwd: ROOT, reject: false})
    expect(result.exitCode, result.stderr).to.equal(0)
    return result.stdout
  }

  it('runs the quickstart (tiny-random-llm, made on first launch), the client, Anthropic, tools, Ollama, custom-model and embedding examples as written', async () => {
    const quickstart = await execa('bash', ['-euo', 'pipefail', '-c', await readmeBlock('quickstart')], {cwd: directory, env, reject: false})
    expect(quickstart.exitCode, quickstart.stderr).to.equal(0)
    expect(quickstart.stdout).to.contain('Model uid: tiny-random-llm')
    expect(quickstart.stdout).to.match(/tiny-random-llm\s+LLM\s+tiny-random-llm\s+llama.cpp\s+ggufv2\s+0_0001\s+f32\s+ready/)
    expect(quickstart.stdout).to.match(/Assistant: \S/)
    expect(quickstart.stdout).to.match(/Completion: \S/)

    expect((await runNode('openai-client')).length).to.be.greaterThan(0)
    expect(await runNode('anthropic-client')).to.match(/^[\s\S]+\nmax_tokens 32\n\d+$/)
    expect(await runNode('tools')).to.match(/^get_weather \{ city: (['"`]).*\1 \}\n\{ name: (['"`]).*\2, indoor: (true|false) \}$/)
    expect(await runNode('ollama-client')).to.match(/^\[ 'tiny-random-llm' \]\n[\s\S]* 16$/)

    const model = join(directory, 'model.gguf')
    await writeRandomLlamaGguf(model)
    const custom = await execa('bash', ['-euo', 'pipefail', '-c', (await readmeBlock('custom-model')).replace('/path/to/model.gguf', model)], {cwd: directory, env, reject: false})
    expect(custom.exitCode, custom.stderr).to.equal(0)
    expect(custom.stdout).to.contain('Registered my-model (LLM).')
    expect(custom.stdout).to.contain('Model uid: my-model')
    expect(custom.stdout).to.match(/my-model\s+LLM\s+my-model\s+llama.cpp\s+ggufv2\s+0_5\s+q4_0\s+ready/)
    expect(custom.stdout).to.match(/Assistant: \S/)
    expect(custom.stdout).to.match(/Completion: \S/)
    expect(custom.stdout).to.contain('Terminated my-model.')

    const embedder = join(directory, 'embedder.gguf')
    const reranker = join(directory, 'reranker.gguf')
    await writeRandomBertGguf(embedder)
    await writeRandomBertGguf(reranker, {kind: 'reranker'})
    const retrieval = (await readmeBlock('embeddings-rerank'))
      .replace('/path/to/bge-small-en-v1.5-q8_0.gguf', embedder)
      // The generated embedding model has 64 dimensions where bge-small has 384, and a launch refuses a registration its file contradicts.
      .replace('"dimensions": 384', '"dimensions": 64')
      .replace('/path/to/bge-reranker-v2-m3-Q4_0.gguf', reranker)
      .replaceAll('http://127.0.0.1:9997', service.url)
    const embedded = await execa('bash', ['-euo', 'pipefail', '-c', retrieval], {cwd: directory, env, reject: false})
    expect(embedded.exitCode, embedded.stderr).to.equal(0)
    expect(embedded.stdout).to.match(/my-embedder\s+embedding\s+my-embedder\s+llama.cpp\s+q8_0\s+64\s+127\s+ready/)
    expect(embedded.stdout).to.match(/\n64\n64\n\[\{"document":null,"index":[01],"relevance_score":[\d.e-]+\}\]$/)
  })

  it('runs the client library block, with the built-in embedding and rerank models it says to launch', async () => {
    for (const model of ['tiny-random-embedding', 'tiny-random-rerank']) {
      const launch = await execa('servicectl', ['launch', '-n', model], {cwd: directory, env, reject: false})
      expect(launch.exitCode, launch.stderr).to.equal(0)
    }
    const printed = await runNode('client-library')
    expect(printed, printed).to.match(/\S[\s\S]*tiny-random-embedding/)
  })

  it('runs the reasoning blocks: tiny-random-llm launched to reason, its reasoning answered, streamed, and switched off', async () => {
    const launch = await execa('bash', ['-euo', 'pipefail', '-c', await readmeBlock('reasoning-launch')], {cwd: directory, env, reject: false})
    expect(launch.exitCode, launch.stderr).to.equal(0)
    expect(launch.stdout).to.contain('Model uid: tiny-thinker')
    const [reasoning, answer, streamed, off] = (await runNode('reasoning')).split('\n')
    expect(reasoning).to.match(/^reasoning: "\S/)
    expect(answer).to.equal('answer: "" 8')
    expect(streamed.replace('streamed:', 'reasoning:')).to.equal(reasoning)
    expect(off).to.equal('without thinking: null')
  })

  it('runs the flexible block on an ONNX graph the test writes', async () => {
    const model = join(directory, 'linear.onnx')
    await writeLinearModel(model, [[1, 2], [3, 4], [5, 6]])
    const script = (await readmeBlock('flexible')).replace('/path/to/linear.onnx', model).replaceAll('http://127.0.0.1:9997', service.url)
    const run = await execa('bash', ['-euo', 'pipefail', '-c', script], {cwd: directory, env, reject: false})
    expect(run.exitCode, run.stderr).to.equal(0)
    expect(run.stdout).to.contain('Registered my-linear (flexible).')
    expect(run.stdout).to.match(/\n\[2\]\n\[2\]$/)
  })

  it('runs the images block on the tiny random pipelines (the diffusers engine\'s environment, cached)', async function () {
    this.timeout(900_000)
    const media = await startService({env: await diffusersServiceEnv()})
    try {
      const run = await execa('bash', ['-euo', 'pipefail', '-c', (await readmeBlock('images')).replaceAll('http://127.0.0.1:9997', media.url)], {cwd: directory, env: {...env, SERVICE_ENDPOINT: media.url}, reject: false})
      expect(run.exitCode, run.stderr).to.equal(0)
      expect(run.stdout).to.contain(`Wrote night-1.png`)
      expect(run.stdout).to.contain(`Wrote waves-1.mp4`)
      expect((await readFile(join(directory, 'lighthouse.png'))).subarray(1, 4).toString('latin1')).to.equal('PNG')
    } finally {
      await media.stop()
    }
  })

  it("runs the ocr block on tiny-random-ocr (the transformers engine's environment, cached)", async function () {
    this.timeout(900_000)
    const ocr = await startService({env: await diffusersServiceEnv()})
    try {
      await writeFile(join(directory, 'receipt.png'), solidPng(40, 24, [250, 250, 240]))
      const run = await execa('bash', ['-euo', 'pipefail', '-c', (await readmeBlock('ocr')).replaceAll('http://127.0.0.1:9997', ocr.url)], {cwd: directory, env: {...env, SERVICE_ENDPOINT: ocr.url}, reject: false})
      expect(run.exitCode, run.stderr).to.equal(0)
      expect(run.stdout).to.contain('Model uid: tiny-random-ocr')
    } finally {
      await ocr.stop()
    }
  })

  it('runs the audio block: tiny-random-whisper, servicectl transcribe, curl verbose_json', async () => {
    await writeTestAudio(directory, 'mp3', 3, 'meeting')
    const script = (await readmeBlock('audio')).replaceAll('http://127.0.0.1:9997', service.url)
    const run = await execa('bash', ['-euo', 'pipefail', '-c', script], {cwd: directory, env, reject: false})
    expect(run.exitCode, run.stderr).to.equal(0)
    expect(run.stdout).to.contain('Model uid: tiny-random-whisper')
    expect(run.stdout).to.match(/\n1\n00:00:\d\d,\d{3} --> 00:00:\d\d,\d{3}\n/)
    expect(run.stdout).to.match(/\{"duration":3(\.\d+)?,"language":"[a-z ]+"\}\n?$/)
  })

  it('runs the catalogue block: download on launch, cached, cal-model-mem, chat, terminate, remove-cache', async () => {
    const model = join(directory, 'catalogue.gguf')
    // Qwen2.5's training context, so the block's `cal-model-mem -c 4096` is one the model takes.
    await writeRandomLlamaGguf(model, {contextLength: 32_768})
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

describe('README engine build example', () => {
  it('checks the programs and prints the command without building', async () => {
    const directory = await temporaryDirectory()
    const bin = join(directory, 'bin')
    await mkdir(bin)
    await writeFile(join(bin, 'servicectl'), `#!/bin/sh\nexec node ${join(ROOT, 'bin/servicectl.js')} "$@"\n`)
    // Stand-ins, so that the example passes on a machine without compilers; a dry run starts none of them.
    for (const program of ['cmake', 'c++', 'cc', 'make', 'git', 'npm']) await writeFile(join(bin, program), '#!/bin/sh\nexit 1\n')
    for (const program of await readdir(bin)) await chmod(join(bin, program), 0o755)

    const run = await execa('bash', ['-euo', 'pipefail', '-c', await readmeBlock('engine-build')], {
      cwd: directory,
      env: {PATH: `${bin}:${process.env.PATH}`, SERVICE_HOME: join(directory, 'home')},
      reject: false,
    })
    await rm(directory, {force: true, recursive: true})
    expect(run.exitCode, run.stderr).to.equal(0)
    expect(run.stdout).to.contain(`  needs cmake: ${join(bin, 'cmake')}\n`)
    expect(run.stdout).to.match(/\nCommand: \S+ \S+\/engine-llama-cpp\/dist\/build-portable\.js\nDry run: nothing was run\.$/)
  })
})

describe('README access-control example', () => {
  let service: RunningService
  let directory: string

  before(async () => {
    directory = await temporaryDirectory()
    const config = join(directory, 'auth.json')
    await writeFile(config, (await readmeBlock('auth-config')).replace('<openssl rand -hex 32>', randomBytes(32).toString('hex')))
    service = await startService({args: ['--auth-config', config]})
  })

  after(async () => service?.stop())

  it('refuses the config until the secret is filled in', async () => {
    const template = join(directory, 'template.json')
    await writeFile(template, await readmeBlock('auth-config'))
    expect(await loadAuthConfig(template).catch((error) => error.message)).to.match(/auth_config.secret_key is too weak: .*; generate one with `openssl rand -hex 32`$/)
  })

  it('logs in, lists and calls with an API key as written', async () => {
    const bin = join(directory, 'bin')
    await mkdir(bin)
    await writeFile(join(bin, 'servicectl'), `#!/bin/sh\nexec node ${join(ROOT, 'bin/servicectl.js')} "$@"\n`)
    await chmod(join(bin, 'servicectl'), 0o755)
    const script = (await readmeBlock('auth-login')).replace('http://127.0.0.1:9997', service.url)
    const env = {PATH: `${bin}:${process.env.PATH}`, SERVICE_ENDPOINT: service.url, SERVICE_HOME: join(directory, 'home')}
    const run = await execa('bash', ['-euo', 'pipefail', '-c', script], {cwd: directory, env, reject: false})
    expect(run.exitCode, run.stderr).to.equal(0)
    expect(run.stdout).to.match(new RegExp(`^Logged in to ${service.url} as reader until `))
    expect(run.stdout).to.contain('No models are running.')
    expect(run.stdout.trim().split('\n').at(-1)).to.equal('{"data":[],"object":"list"}')
  })
})

describe('README typed client example', () => {
  let service: RunningService
  let directory: string

  before(async () => {
    service = await startService()
    // Inside the repository, so that the example finds openapi-typescript and openapi-fetch in its node_modules.
    directory = await mkdtemp(join(ROOT, 'test', '.readme-client-'))
  })

  after(async () => {
    await service?.stop()
    await rm(directory, {force: true, recursive: true})
  })

  it('generates the types from /openapi.json, and the client written with them type-checks and launches, follows and chats', async () => {
    // The repository has both packages already (devDependencies), and the test has no network: the install line is left out.
    const generate = (await readmeBlock('openapi-types')).replaceAll('http://127.0.0.1:9997', service.url).replace(/^npm install .*\n/m, '')
    const generated = await execa('bash', ['-euo', 'pipefail', '-c', generate], {cwd: directory, env: {PATH: `${join(ROOT, 'node_modules/.bin')}:${process.env.PATH}`}, reject: false})
    expect(generated.exitCode, generated.stderr).to.equal(0)
    await writeFile(join(directory, 'client.ts'), (await readmeBlock('openapi-client')).replaceAll('http://127.0.0.1:9997', service.url))
    const tsc = await execa('node', [join(ROOT, 'node_modules/typescript/bin/tsc'), '--noEmit', '--strict', '--target', 'es2022', '--module', 'nodenext', 'client.ts'], {cwd: directory, reject: false})
    expect(tsc.exitCode, tsc.stdout).to.equal(0)
    const run = await execa('node', ['client.ts'], {cwd: directory, reject: false})
    expect(run.exitCode, run.stderr).to.equal(0)
    expect(run.stdout).to.match(/^ready \S/)
  })
})
