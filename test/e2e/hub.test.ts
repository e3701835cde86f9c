/**
 * The model hub through a real `service-local` and `servicectl`, against a local hub that speaks the Hugging
 * Face and ModelScope APIs (test/helpers/fake-hub.ts): first launches download, later ones do not, transfers
 * resume, corrupt files are refused, launches report progress and can be cancelled, and the cache can be
 * listed, measured and cleaned. Every scenario uses its own quantization, so its cache entry is its own.
 */
import {expect} from 'chai'
import {execa} from 'execa'
import {existsSync} from 'node:fs'
import {readdir, readFile} from 'node:fs/promises'
import {join} from 'node:path'

import {FakeHub, type FakeHubRepo} from '../helpers/fake-hub.js'
import {writeRandomLlamaGguf, writeRandomLlamaGgufSplit} from '../../plugins/engine-llama-cpp/src/gguf/random-llama.js'
import {callApi, closedPort, type RunningService, SERVICECTL, servicectl, startService, temporaryDirectory, until} from '../helpers/service.js'

const REPO = 'test-org/tiny-GGUF'
const QUANTIZATIONS = ['q4_0', 'q5_0', 'q6_k', 'q3_k', 'q8_0', 'split', 'q4_k_m', 'q5_k_m', 'q2_k', 'f16', 'q4_1']
const SPLIT_PARTS = ['00001-of-00002', '00002-of-00002']

function source(modelId: string, quantizations: string[]) {
  return {
    model_file_name_split_template: 'tiny-{quantization}-{part}.gguf',
    model_file_name_template: `${modelId === REPO ? 'tiny' : 'gated'}-{quantization}.gguf`,
    model_id: modelId,
    quantization_parts: {split: SPLIT_PARTS},
    quantizations,
  }
}

function family(name: string, sources: Record<string, ReturnType<typeof source>>) {
  return {context_length: 2048, model_ability: ['chat', 'generate'], model_lang: ['en'], model_name: name, model_specs: [{model_format: 'ggufv2', model_size_in_billions: '0_5', model_src: sources}], version: 2}
}

describe('model hub (service-local, servicectl, a local Hugging Face / ModelScope)', function () {
  let hub: FakeHub
  let repo: FakeHubRepo
  let service: RunningService
  let half: number
  const cli = (args: string[], input?: string) => servicectl(args, {env: {SERVICE_ENDPOINT: service.url}, input})
  const api = (method: string, path: string, body?: unknown) => callApi(service, method, path, body)
  const launch = (quantization: string, extra: Record<string, unknown> = {}, query = '') =>
    api('POST', `/v1/models${query}`, {model_engine: 'llama.cpp', model_name: 'hub-tiny', quantization, ...extra})
  const entry = (quantization: string, name = 'hub-tiny') => join(service.home, 'cache', `${name}--0_5B--ggufv2--${quantization}`)
  const progressOf = async (uid: string) => (await api('GET', `/v1/models/${uid}/progress`)).body

  before(async () => {
    const directory = await temporaryDirectory()
    const tiny = join(directory, 'tiny.gguf')
    const {bytes} = await writeRandomLlamaGguf(tiny)
    half = Math.floor(bytes / 2)
    const parts = SPLIT_PARTS.map((part) => join(directory, `tiny-split-${part}.gguf`))
    await writeRandomLlamaGgufSplit(parts)
    hub = await FakeHub.start()
    const files: Record<string, string> = Object.fromEntries(QUANTIZATIONS.filter((q) => q !== 'split' && q !== 'q5_k_m').map((q) => [`tiny-${q}.gguf`, tiny]))
    for (const [index, part] of SPLIT_PARTS.entries()) files[`tiny-split-${part}.gguf`] = parts[index]
    repo = await hub.addRepo(REPO, files)
    await hub.addRepo('test-org/gated-GGUF', {'gated-q4_0.gguf': tiny}, {token: 'hf_secret'})
    service = await startService({env: {HF_ENDPOINT: hub.url, MODELSCOPE_ENDPOINT: hub.url}})
    const families = [
      family('hub-tiny', {huggingface: source(REPO, QUANTIZATIONS), modelscope: source(REPO, QUANTIZATIONS)}),
      family('hub-gated', {huggingface: source('test-org/gated-GGUF', ['q4_0'])}),
      family('hub-missing', {huggingface: source('test-org/no-such-GGUF', ['q4_0'])}),
    ]
    for (const model of families) expect((await api('POST', '/v1/model_registrations/LLM', {model, persist: false})).status).to.equal(200)
  })

  after(async () => {
    await service?.stop()
    await hub?.stop()
  })

  it('downloads a catalogue model on its first launch into a labelled cache entry, and never again', async () => {
    const first = await cli(['launch', '-n', 'hub-tiny', '-en', 'llama.cpp', '-q', 'q4_0'])
    expect(first.exitCode, first.stderr).to.equal(0)
    expect(first.stdout.trim()).to.equal('Model uid: hub-tiny')
    expect(first.stderr).to.match(/^Downloading tiny-q4_0.gguf \(\d+\.\d kB\) from huggingface test-org\/tiny-GGUF\.$/m)
    expect(first.stderr).to.match(/^Downloaded \d+\.\d kB in \d+:\d\d\.$/m)
    expect(hub.requests.map((r) => r.kind)).to.deep.equal(['listing', 'redirect', 'file'])
    expect(hub.requests[0].url).to.equal(`/api/models/${REPO}/revision/main?blobs=true`)
    expect(hub.requests[1].url).to.equal(`/${REPO}/resolve/${repo.commit}/tiny-q4_0.gguf`)

    expect((await readdir(entry('q4_0'))).sort()).to.deep.equal(['manifest.json', 'tiny-q4_0.gguf'])
    const manifest = JSON.parse(await readFile(join(entry('q4_0'), 'manifest.json'), 'utf8'))
    const file = repo.files.get('tiny-q4_0.gguf')!
    expect(manifest).to.deep.include({commit: repo.commit, hub: 'huggingface', model_format: 'ggufv2', model_name: 'hub-tiny', model_size_in_billions: '0_5', model_version: 'hub-tiny--0_5B--ggufv2--q4_0', quantization: 'q4_0', repo: REPO, revision: 'main'})
    expect(manifest.files).to.deep.equal([{name: 'tiny-q4_0.gguf', sha256: file.sha256, size: file.size, url: `${hub.url}/${REPO}/resolve/${repo.commit}/tiny-q4_0.gguf`}])

    const chat = await api('POST', '/v1/chat/completions', {max_tokens: 3, messages: [{content: 'Hi', role: 'user'}], model: 'hub-tiny'})
    expect(chat.status).to.equal(200)
    expect((await api('DELETE', '/v1/models/hub-tiny')).status).to.equal(200)

    const requests = hub.requests.length
    expect(await launch('q4_0', {model_uid: 'again'})).to.deep.equal({body: {model_uid: 'again'}, status: 200})
    expect(hub.requests.length - requests, 'requests to the hub on the second launch').to.equal(0)
    expect((await api('DELETE', '/v1/models/again')).status).to.equal(200)
  })

  it('resumes a transfer whose connection dropped half-way with a Range request, and verifies it', async () => {
    const hold = hub.hold('tiny-q5_0.gguf', half)
    expect((await launch('q5_0', {model_uid: 'resumed'}, '?wait_ready=false')).status).to.equal(200)
    await hold.reached
    await until(async () => ((await progressOf('resumed')).downloaded_bytes === half ? true : undefined), 'the first half to be on disk')
    hold.drop()
    await until(async () => ((await progressOf('resumed')).stage === 'ready' ? true : undefined), 'the launch to be ready')
    const transfers = hub.fileRequests('tiny-q5_0.gguf')
    expect(transfers.map((r) => r.range)).to.deep.equal([undefined, `bytes=${half}-`])
    const manifest = JSON.parse(await readFile(join(entry('q5_0'), 'manifest.json'), 'utf8'))
    expect(manifest.files[0].sha256).to.equal(repo.files.get('tiny-q5_0.gguf')!.sha256)
    expect((await api('DELETE', '/v1/models/resumed')).status).to.equal(200)
  })

  it('refuses a corrupt download with a clear error, keeps nothing, and leaves the uid free', async () => {
    hub.corruptFile('tiny-q6_k.gguf')
    for (let attempt = 0; attempt < 2; attempt++) {
      const {body, status} = await launch('q6_k', {model_uid: 'corrupt'})
      expect(status).to.equal(502)
      expect(body.error.code).to.equal('download_corrupt')
      expect(body.error.message).to.match(/^the download of tiny-q6_k.gguf from http:\S+ is corrupt: its SHA-256 is [0-9a-f]{64} but huggingface lists [0-9a-f]{64}\. Nothing was kept; launch again to download it anew\.$/)
    }

    expect(existsSync(entry('q6_k'))).to.equal(false)
    expect((await api('GET', '/v1/models')).body.data).to.deep.equal([])
    const progress = await progressOf('corrupt')
    expect(progress).to.deep.include({stage: 'error'})
    expect(progress.error.code).to.equal('download_corrupt')
    expect((await api('GET', '/v1/models/corrupt')).body.error.message).to.match(/^model "corrupt" is not running\. Its last launch failed: the download of tiny-q6_k.gguf/)
  })

  it('answers at once with wait_ready=false; progress only moves forward, reaches 1, and two launches share one download', async () => {
    const hold = hub.hold('tiny-q3_k.gguf', half)
    const listings = hub.requests.filter((r) => r.kind === 'listing').length
    expect(await launch('q3_k', {model_uid: 'first'}, '?wait_ready=false')).to.deep.equal({body: {model_uid: 'first'}, status: 200})
    await hold.reached
    expect(await launch('q3_k', {model_uid: 'second'}, '?wait_ready=false')).to.deep.equal({body: {model_uid: 'second'}, status: 200})
    const samples = [await progressOf('first')]
    const held = await until(async () => {
      const [first, second] = [await progressOf('first'), await progressOf('second')]
      samples.push(first)
      return first.downloaded_bytes === half && second.downloaded_bytes === half ? [first, second] : undefined
    }, 'both launches to show the held download')
    for (const progress of held) {
      expect(progress).to.deep.include({downloaded_bytes: half, hub: 'huggingface', repo: REPO, stage: 'downloading', total_bytes: repo.files.get('tiny-q3_k.gguf')!.size})
      expect(progress.progress).to.be.above(0).and.below(0.9)
    }

    const listed = (await api('GET', '/v1/models')).body.data.find((m: {id: string}) => m.id === 'first')
    expect(listed).to.include({stage: 'downloading', status: 'launching'})
    expect((await cli(['list'])).stdout).to.match(/^first\s+LLM\s+hub-tiny\s+llama.cpp\s+ggufv2\s+0_5\s+q3_k\s+downloading 4\d%$/m)

    hold.release()
    await until(async () => {
      const [first, second] = [await progressOf('first'), await progressOf('second')]
      samples.push(first)
      return first.stage === 'ready' && second.stage === 'ready' ? true : undefined
    }, 'both launches to be ready')

    const stages = ['pending', 'downloading', 'loading', 'ready']
    for (const [index, sample] of samples.entries()) {
      if (index === 0) continue
      expect(sample.progress, `progress sample ${index}`).to.be.at.least(samples[index - 1].progress)
      expect(stages.indexOf(sample.stage), `stage of sample ${index}`).to.be.at.least(stages.indexOf(samples[index - 1].stage))
    }

    expect(samples.at(-1)).to.deep.include({progress: 1, stage: 'ready'})
    expect(hub.fileRequests('tiny-q3_k.gguf')).to.have.length(1)
    expect(hub.requests.filter((r) => r.kind === 'listing').length - listings).to.equal(1)
    for (const uid of ['first', 'second']) expect((await api('DELETE', `/v1/models/${uid}`)).status).to.equal(200)
  })

  it('cancels a launch while it downloads, answers its waiting caller with 499, and leaves nothing behind', async () => {
    const hold = hub.hold('tiny-q8_0.gguf', half)
    const waiting = launch('q8_0', {model_uid: 'cancel-me'})
    await hold.reached
    await until(async () => ((await progressOf('cancel-me')).downloaded_bytes === half ? true : undefined), 'the download to reach the hold')
    expect(await api('POST', '/v1/models/cancel-me/cancel')).to.deep.equal({body: null, status: 200})
    const answered = await waiting
    expect(answered.status).to.equal(499)
    expect(answered.body.error).to.include({code: 'request_aborted', message: 'the launch of cancel-me was cancelled.'})
    expect(existsSync(entry('q8_0'))).to.equal(false)
    expect(await progressOf('cancel-me')).to.deep.include({stage: 'cancelled'})
    expect((await api('GET', '/v1/models')).body.data).to.deep.equal([])
    expect((await api('POST', '/v1/models/cancel-me/cancel')).status).to.equal(409)
    hold.release()
  })

  it('downloads every part of a split GGUF and loads it from the first', async () => {
    expect((await launch('split', {model_uid: 'split'})).status).to.equal(200)
    expect((await readdir(entry('split'))).sort()).to.deep.equal(['manifest.json', 'tiny-split-00001-of-00002.gguf', 'tiny-split-00002-of-00002.gguf'])
    const chat = await api('POST', '/v1/chat/completions', {max_tokens: 3, messages: [{content: 'Hi', role: 'user'}], model: 'split'})
    expect(chat.status).to.equal(200)
    expect((await api('DELETE', '/v1/models/split')).status).to.equal(200)
  })

  it('downloads from ModelScope with --download-hub, using its file API and download URL', async () => {
    const launched = await cli(['launch', '-n', 'hub-tiny', '-en', 'llama.cpp', '-q', 'q4_k_m', '--download-hub', 'modelscope', '-u', 'from-modelscope'])
    expect(launched.exitCode, launched.stderr).to.equal(0)
    expect(launched.stderr).to.contain('from modelscope test-org/tiny-GGUF.')
    const urls = hub.requests.map((r) => r.url)
    expect(urls).to.include(`/api/v1/models/${REPO}/repo/files?Revision=master&Recursive=true`)
    expect(urls).to.include(`/api/v1/models/${REPO}/repo?Revision=master&FilePath=tiny-q4_k_m.gguf`)
    expect(JSON.parse(await readFile(join(entry('q4_k_m'), 'manifest.json'), 'utf8'))).to.include({hub: 'modelscope', revision: 'master'})
    expect((await cli(['terminate', '--model-uid', 'from-modelscope'])).exitCode).to.equal(0)
  })

  it('names the missing file or repo, and the token a gated repo needs', async () => {
    const missingFile = await launch('q5_k_m')
    expect(missingFile.status).to.equal(502)
    expect(missingFile.body.error.message).to.equal(
      `repo or file not found on huggingface: ${hub.url}/${REPO}/resolve/${repo.commit}/tiny-q5_k_m.gguf (the repo ${REPO} at main has no tiny-q5_k_m.gguf; its GGUF files are: ${[...repo.files.keys()].join(', ')}).`,
    )
    const missingRepo = await api('POST', '/v1/models', {model_engine: 'llama.cpp', model_name: 'hub-missing'})
    expect(missingRepo.body.error.message).to.equal(`repo or file not found on huggingface (or it is private or gated: then set HF_TOKEN): ${hub.url}/api/models/test-org/no-such-GGUF/revision/main?blobs=true`)
    const gated = await cli(['launch', '-n', 'hub-gated', '-en', 'llama.cpp'])
    expect(gated.exitCode).to.equal(1)
    expect(gated.stderr).to.contain(`Error: gated repo on huggingface: ${hub.url}/test-org/gated-GGUF/resolve/`)
    expect(gated.stderr).to.contain("set HF_TOKEN to a token of an account that has accepted the model's license on its page.")
    for (const folder of [entry('q5_k_m'), entry('q4_0', 'hub-missing'), entry('q4_0', 'hub-gated')]) expect(existsSync(folder), folder).to.equal(false)
  })

  it('sends HF_TOKEN to gated repos, and SERVICE_MODEL_SRC picks the hub whose unreachability it then explains', async () => {
    const other = await startService({env: {HF_ENDPOINT: hub.url, HF_TOKEN: 'hf_secret', MODELSCOPE_ENDPOINT: `http://127.0.0.1:${await closedPort()}`, SERVICE_MODEL_SRC: 'modelscope'}})
    try {
      for (const model of [family('hub-gated', {huggingface: source('test-org/gated-GGUF', ['q4_0'])}), family('hub-tiny', {huggingface: source(REPO, QUANTIZATIONS), modelscope: source(REPO, QUANTIZATIONS)})])
        expect((await callApi(other, 'POST', '/v1/model_registrations/LLM', {model, persist: false})).status).to.equal(200)
      expect((await callApi(other, 'POST', '/v1/models', {model_engine: 'llama.cpp', model_name: 'hub-gated'})).status).to.equal(200)
      const unreachable = await callApi(other, 'POST', '/v1/models', {model_engine: 'llama.cpp', model_name: 'hub-tiny', quantization: 'q4_1'})
      expect(unreachable.status).to.equal(503)
      expect(unreachable.body.error.message).to.match(
        /^cannot reach modelscope at http:\/\/127.0.0.1:\d+ \(ECONNREFUSED\) while fetching \S+; check the network connection, or pick another hub with SERVICE_MODEL_SRC=huggingface \(or --download-hub huggingface\), or another endpoint with MODELSCOPE_ENDPOINT\.$/,
      )
    } finally {
      await other.stop()
    }
  })

  it('stops a launch with Ctrl-C from servicectl, which cancels it and leaves nothing behind', async () => {
    const hold = hub.hold('tiny-q2_k.gguf', half)
    const child = execa('node', [SERVICECTL, 'launch', '-n', 'hub-tiny', '-en', 'llama.cpp', '-q', 'q2_k', '-u', 'interrupted'], {env: {NO_COLOR: '1', SERVICE_ENDPOINT: service.url}, reject: false})
    let stderr = ''
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
    await hold.reached
    await until(async () => (stderr.includes('Downloading tiny-q2_k.gguf') ? true : undefined), 'servicectl to show the download')
    child.kill('SIGINT')
    const result = await child
    expect(result.exitCode).to.equal(130)
    expect(result.stderr).to.contain('Downloading tiny-q2_k.gguf')
    expect(result.stderr).to.contain('Cancelled the launch of interrupted; nothing of it was kept.')
    expect(await progressOf('interrupted')).to.deep.include({stage: 'cancelled'})
    expect(existsSync(entry('q2_k'))).to.equal(false)
    hold.release()
  })

  it('lists the cache; remove-cache confirms, refuses while a model uses the files, and deletes', async () => {
    const listed = await cli(['cached'])
    expect(listed.stdout.split('\n')[0]).to.match(/^Model version\s+Hub\s+Repo\s+Disk size\s+Status\s+Path$/)
    expect(listed.stdout).to.match(new RegExp(`hub-tiny--0_5B--ggufv2--q4_0\\s+huggingface\\s+test-org/tiny-GGUF\\s+\\d+\\.\\d kB\\s+complete\\s+${entry('q4_0')}`))
    expect(listed.stdout).to.match(/hub-tiny--0_5B--ggufv2--q4_k_m\s+modelscope\s+/)
    expect(listed.stdout).to.match(/^\d+ model versions, \d+\.\d+ MB in all\.$/m)
    const json = JSON.parse((await cli(['cached', '-n', 'hub-tiny', '--json'])).stdout)
    expect(json.map((m: {model_version: string}) => m.model_version)).to.include.members(['hub-tiny--0_5B--ggufv2--q4_0', 'hub-tiny--0_5B--ggufv2--split'])
    expect(json.find((m: {quantization: string}) => m.quantization === 'split').files).to.have.length(2)

    expect((await launch('q4_0', {model_uid: 'in-use'})).status).to.equal(200)
    const refused = await cli(['remove-cache', '-n', 'hub-tiny--0_5B--ggufv2--q4_0', '--check'])
    expect(refused.exitCode).to.equal(1)
    expect(refused.stderr.trim()).to.equal('Error: hub-tiny--0_5B--ggufv2--q4_0 is in use by model in-use on worker local; terminate it first.')
    expect((await cli(['terminate', '--model-uid', 'in-use'])).exitCode).to.equal(0)

    const declined = await cli(['remove-cache', '-n', 'hub-tiny--0_5B--ggufv2--q4_0'], 'n\n')
    expect(declined.exitCode).to.equal(1)
    expect(declined.stderr).to.contain(`These files will be deleted:\n  ${join(entry('q4_0'), 'tiny-q4_0.gguf')}\n`)
    expect(declined.stderr).to.contain('Declined: nothing was deleted.')
    expect(existsSync(entry('q4_0'))).to.equal(true)

    const confirmed = await cli(['remove-cache', '-n', 'hub-tiny--0_5B--ggufv2--q4_0'], 'y\n')
    expect(confirmed.stdout.trim()).to.equal('Deleted hub-tiny--0_5B--ggufv2--q4_0 (2 files).')
    expect(existsSync(entry('q4_0'))).to.equal(false)
    const unknown = await cli(['remove-cache', '-n', 'hub-tiny--0_5B--ggufv2--q4_0', '--check'])
    expect(unknown.stderr.trim()).to.equal('Error: there is no cached model version named hub-tiny--0_5B--ggufv2--q4_0; `servicectl cached` lists them.')
  })

  it('estimates memory from the GGUF header, cached or read from the hub without downloading it', async () => {
    const cached = await cli(['cal-model-mem', '-n', 'hub-tiny', '-q', 'q5_0', '-c', '1024', '--n_parallel', '2'])
    expect(cached.exitCode, cached.stderr).to.equal(0)
    expect(cached.stdout).to.match(/^Model version: {2}hub-tiny--0_5B--ggufv2--q5_0 \(header read from the local file\)$/m)
    expect(cached.stdout).to.match(/^Context: {8}1024 tokens × 2 parallel sequences$/m)
    for (const line of ['Weights', 'KV cache', 'Overhead', 'Total']) expect(cached.stdout).to.match(new RegExp(`^${line}:\\s+\\d+\\.\\d [kM]B \\(\\d+ bytes\\)$`, 'm'))

    const local = JSON.parse((await cli(['cal-model-mem', '-n', 'hub-tiny', '-q', 'q5_0', '-c', '1024', '--n_parallel', '2', '--json'])).stdout)
    expect(local.total_bytes).to.equal(local.weights_bytes + local.kv_cache_bytes + local.overhead_bytes)
    expect(local.weights_bytes).to.be.above(0)
    const remote = JSON.parse((await cli(['cal-model-mem', '-n', 'hub-tiny', '-q', 'f16', '-c', '1024', '--n_parallel', '2', '--json'])).stdout)
    expect(remote).to.deep.include({...local, model_version: 'hub-tiny--0_5B--ggufv2--f16', source: 'huggingface'})
    const reads = hub.fileRequests('tiny-f16.gguf')
    expect(reads.length).to.be.above(0)
    for (const read of reads) expect(read.range).to.match(/^bytes=\d+-\d+$/)
    expect(existsSync(entry('f16'))).to.equal(false)
  })

  it('launches a cached model with the hub down, and says how to pick another hub for one that is not cached', async () => {
    await hub.stop()
    expect((await launch('q5_0', {model_uid: 'offline'})).status).to.equal(200)
    const uncached = await launch('q4_1')
    expect(uncached.status).to.equal(503)
    expect(uncached.body.error.message).to.match(/^cannot reach huggingface at http:\/\/127.0.0.1:\d+ \(ECONNREFUSED\) .* SERVICE_MODEL_SRC=modelscope \(or --download-hub modelscope\), or a mirror with HF_ENDPOINT\.$/)
    expect((await api('DELETE', '/v1/models/offline')).status).to.equal(200)
  })
})
