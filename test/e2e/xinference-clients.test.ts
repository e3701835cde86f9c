/**
 * Xinference's own clients, unmodified from PyPI, against a real `service-local` serving generated tiny models (a
 * chat LLM, an embedding and a rerank model on llama.cpp, tiny-random-vits for speech and tiny-random-whisper for
 * transcription, an ONNX graph as a flexible model, the tiny random diffusers pipelines for images and video):
 * xinference-client 1.0.1 (which Dify's Xinference plugin pins), 1.16.0 (the newest langchain-xinference accepts)
 * and 4.1.0, sync and async, with access control off and on (an API key, a login, and the 401/403 reasons the user
 * reads); then langchain-xinference, LlamaIndex's Xinference classes and RAGFlow's rerank request (test/fixtures/xinference-clients). The Python environments are made with uv
 * once and kept in the test cache. The run writes what carried over to docs/compatibility.md, and fails when the
 * committed table differs (UPDATE_COMPATIBILITY=1 rewrites it), or when a call fails for a reason not written below.
 */
import {expect} from 'chai'
import {execa} from 'execa'
import {readFile, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import {apiKeyOf, passwordOf, writeTestAuthConfig} from '../helpers/auth.js'
import {writeTinyChatModel, writeTinyRetrievalModel} from '../helpers/models.js'
import {writeLinearModel} from '../helpers/onnx-models.js'
import {pythonWithPackages, TEST_CACHE, uvFromPyPI} from '../helpers/python-tools.js'
import {callApi, closedPort, ROOT, type RunningService, startService, temporaryDirectory} from '../helpers/service.js'

const CLIENT_VERSIONS = ['1.0.1', '1.16.0', '4.1.0']
/** The platforms' packages go beside the client version they accept. */
const INTEGRATIONS = ['langchain-xinference==0.1.2', 'llama-index-embeddings-xinference==0.5.0', 'llama-index-postprocessor-xinference-rerank==0.5.0']
const INTEGRATIONS_CLIENT = '1.16.0'
const FIXTURES = join(ROOT, 'test/fixtures/xinference-clients')
const TABLE = join(ROOT, 'docs/compatibility.md')
const MODELS = {
  CHAT: 'tiny-chat',
  CHAT_NAME: 'tiny-chat',
  EMBEDDER: 'tiny-embedding',
  EMBEDDER_NAME: 'tiny-embedding',
  RERANKER: 'tiny-rerank',
  FLEXIBLE: 'tiny-linear',
  SPEAKER: 'tiny-random-vits',
  TRANSCRIBER: 'tiny-random-whisper',
  IMAGE: 'tiny-random-image',
  VIDEO: 'tiny-random-video',
}

const FLATTENED_FORM =
  "fails in the client: this version's async client hands aiohttp `(None, value)` pairs, which it sends as URL-encoded text (`model=None&model=…`, the image's bytes as text), so no image arrives; fixed in later versions"
const AIOHTTP_REASON = "shows aiohttp's status line (`400, message='Bad Request'`) instead of the service's reason: this version's async client replaces `detail` with it; fixed in later versions"
/** Why a call fails with a client, by `column|call`: a failure not listed here fails the test, as does a listed one that works. */
const KNOWN: Record<string, string> = {
  '1.16.0 async|describe_model (unknown uid: reason shown)': AIOHTTP_REASON,
  '1.16.0 async|launch_model (n_worker=2 refused with a reason)': AIOHTTP_REASON,
  '1.16.0 async|launch_model (wait_ready=False), get_launch_model_progress, get_instance_info':
    'fails in the client before sending: aiohttp refuses the `False` this version puts in the query string; fixed in later versions',
  '1.16.0 async|image_to_image': FLATTENED_FORM,
  '1.16.0 async|inpainting': FLATTENED_FORM,
  '1.16.0 async|infer (flexible)': "answers aiohttp's unread stream instead of the model's answer: a bug of this version's async client, fixed in later versions",
  '1.16.0 async|launch_model without permission (reason shown)': AIOHTTP_REASON,
  '1.16.0 async|rerank (refused: reason shown)': AIOHTTP_REASON,
  '1.16.0 async|speech': "answers aiohttp's unread stream instead of the audio: a bug of this version's async client, fixed in later versions",
  '1.16.0 async|speech (stream)': "closes the answer before reading its stream: a bug of this version's async client, fixed in later versions",
  '1.16.0 async|transcriptions, translations': "fails in the client before sending: this version's async client hands requests' `files=` to aiohttp; fixed in later versions",
}

interface Outcome {
  call: string
  ok: boolean
  detail: string
}

/** Outcomes by table, column and call, in the order the calls first ran. */
const results = new Map<string, Map<string, Map<string, Outcome[]>>>()
function record(table: string, column: string, outcomes: Outcome[]) {
  const columns = results.get(table) ?? results.set(table, new Map()).get(table)!
  const calls = columns.get(column) ?? columns.set(column, new Map()).get(column)!
  for (const outcome of outcomes) calls.set(outcome.call, [...(calls.get(outcome.call) ?? []), outcome])
}

async function runScript(python: string, script: string, args: string[], env: Record<string, string>): Promise<Outcome[]> {
  const {exitCode, stderr, stdout} = await execa(python, [join(FIXTURES, script), ...args], {env: {...env, PYTHONWARNINGS: 'ignore'}, reject: false})
  expect(exitCode, `${script} ${args.join(' ')}: ${stderr.slice(-2000)}`).to.equal(0)
  return stdout
    .split('\n')
    .filter((line) => line.startsWith('{"call"'))
    .map((line) => JSON.parse(line) as Outcome)
}

async function serveTinyModels(args: string[], headers: Record<string, string>): Promise<RunningService> {
  const directory = await temporaryDirectory()
  // No hub: the audio models' weights are generated on first launch; the VITS engine's Python environment is cached.
  const unreachable = `http://127.0.0.1:${await closedPort()}`
  const env = {HF_ENDPOINT: unreachable, MODELSCOPE_ENDPOINT: unreachable, PATH: `${await uvFromPyPI()}:${process.env.PATH}`, SERVICE_VIRTUALENV_DIR: join(TEST_CACHE, 'virtualenv')}
  const service = await startService({args, env})
  const models = [
    ['embedding', (await writeTinyRetrievalModel(directory, 'embedding', MODELS.EMBEDDER)).family, {}],
    ['rerank', (await writeTinyRetrievalModel(directory, 'rerank', MODELS.RERANKER)).family, {}],
    ['LLM', (await writeTinyChatModel(directory, MODELS.CHAT)).family, {model_engine: 'llama.cpp', n_ctx: 512}],
  ] as const
  for (const [type, family, launch] of models) {
    expect((await callApi(service, 'POST', `/v1/model_registrations/${type}`, {model: family, persist: false}, headers)).status).to.equal(200)
    expect((await callApi(service, 'POST', '/v1/models', {model_name: family.model_name, n_threads: 1, ...launch}, headers)).status).to.equal(200)
  }

  const linear = join(directory, 'linear.onnx')
  await writeLinearModel(linear, [[1, 0], [0, 1], [1, 1]])
  const flexible = {launcher: 'onnx', model_description: 'y = x·W + b', model_name: MODELS.FLEXIBLE, model_uri: linear}
  expect((await callApi(service, 'POST', '/v1/model_registrations/flexible', {model: flexible, persist: false}, headers)).status).to.equal(200)
  // The diffusers pipelines have random weights made on first launch, in the Python environment diffusers.test.ts caches too.
  const launches = [
    [MODELS.SPEAKER, 'vits', 'audio', {}],
    [MODELS.TRANSCRIBER, 'whisper.cpp', 'audio', {}],
    [MODELS.FLEXIBLE, 'onnxruntime', 'flexible', {}],
    [MODELS.IMAGE, 'diffusers', 'image', {cpu_threads: 1}],
    [MODELS.VIDEO, 'diffusers', 'video', {cpu_threads: 1}],
  ] as const
  for (const [name, engine, type, parameters] of launches) {
    const launched = await callApi(service, 'POST', '/v1/models', {model_engine: engine, model_name: name, model_type: type, ...parameters}, headers)
    expect(launched.status, JSON.stringify(launched.body)).to.equal(200)
  }

  return service
}

/** One row a call, one column a client: "works", or why not. */
function renderTable(columns: Map<string, Map<string, Outcome[]>>): {markdown: string; problems: string[]} {
  const calls = [...new Set([...columns.values()].flatMap((byCall) => [...byCall.keys()]))]
  const problems: string[] = []
  const cell = (column: string, call: string) => {
    const outcomes = columns.get(column)?.get(call)
    if (!outcomes) return '—'
    const failed = outcomes.find((outcome) => !outcome.ok)
    const known = KNOWN[`${column}|${call}`]
    if (failed && !known) problems.push(`${column}, ${call}: ${failed.detail}`)
    if (!failed && known) problems.push(`${column}, ${call}: works now; remove its reason from KNOWN`)
    return failed ? `no: ${known ?? failed.detail}` : 'works'
  }

  const header = `| call | ${[...columns.keys()].join(' | ')} |\n|---|${[...columns.keys()].map(() => '---').join('|')}|`
  const rows = calls.map((call) => `| ${call} | ${[...columns.keys()].map((column) => cell(column, call)).join(' | ')} |`)
  return {markdown: [header, ...rows].join('\n'), problems}
}

describe('Xinference clients from PyPI (xinference-client 1.0.1, 1.16.0, 4.1.0; langchain-xinference; LlamaIndex; RAGFlow) against service-local', function () {
  this.timeout(1_800_000)
  const pythons = new Map<string, string>()
  let open: RunningService
  let guarded: RunningService

  before(async () => {
    for (const version of CLIENT_VERSIONS)
      pythons.set(version, await pythonWithPackages([`xinference-client==${version}`, ...(version === INTEGRATIONS_CLIENT ? INTEGRATIONS : [])]))
    open = await serveTinyModels([], {})
    const authConfig = await writeTestAuthConfig(await temporaryDirectory())
    guarded = await serveTinyModels(['--auth-config', authConfig], {authorization: `Bearer ${apiKeyOf('root')}`})
  })

  after(async () => {
    await open?.stop()
    await guarded?.stop()
  })

  const runs = CLIENT_VERSIONS.flatMap((version) => [
    {column: version, mode: 'sync', version},
    // 1.0.1 has no async client.
    ...(version === '1.0.1' ? [] : [{column: `${version} async`, mode: 'async', version}]),
  ])

  it('every call works with every client version, sync and async, with access control off', async () => {
    for (const {column, mode, version} of runs) record('client', column, await runScript(pythons.get(version)!, 'calls.py', [mode], {...MODELS, ENDPOINT: open.url}))
  })

  it('every call works with access control on, with an API key or a login, and 401/403 reasons say what is wrong', async () => {
    for (const {column, mode, version} of runs) {
      const env = {...MODELS, ENDPOINT: guarded.url, LIMITED_API_KEY: apiKeyOf('only-models:list')}
      record('client', column, await runScript(pythons.get(version)!, 'calls.py', [mode], {...env, API_KEY: apiKeyOf('root')}))
      record('client', column, await runScript(pythons.get(version)!, 'calls.py', [mode], {...env, PASSWORD: passwordOf('root'), USERNAME: 'root', WRONG_PASSWORD: 'not the password'}))
    }
  })

  it("LangChain's, LlamaIndex's and RAGFlow's Xinference integrations work, with access control off and with an API key", async () => {
    const python = pythons.get(INTEGRATIONS_CLIENT)!
    record('integrations', 'access control off', await runScript(python, 'integrations.py', [], {...MODELS, ENDPOINT: open.url}))
    const guardedRun = await runScript(python, 'integrations.py', [], {...MODELS, API_KEY: apiKeyOf('root'), ENDPOINT: guarded.url})
    record('integrations', 'with an API key', guardedRun)
  })

  it('the compatibility table in docs/compatibility.md is the one this run found', async function () {
    if (results.size < 2) this.skip()
    const clients = renderTable(results.get('client')!)
    const integrations = renderTable(results.get('integrations')!)
    const document = `# Xinference clients: what carries over

Written by \`test/e2e/xinference-clients.test.ts\` from its own run: every public method of xinference-client's
\`RESTfulClient\` and \`AsyncRESTfulClient\` (and their model handles) that this service's model types support, called
by the clients exactly as PyPI ships them, against a service serving generated tiny models. A call counts as working
only if it worked with access control off, with an API key and after \`login()\` (see [Xinference clients](./http-api.md#xinference-clients)). A
"—" is a method or an async client the version does not have.

## xinference-client

${clients.markdown}

## Integrations

langchain-xinference 0.1.2, llama-index-embeddings-xinference 0.5.0 and llama-index-postprocessor-xinference-rerank 0.5.0
with xinference-client ${INTEGRATIONS_CLIENT}, and the rerank request RAGFlow's Xinference provider sends. LlamaIndex's
classes send no credentials, so they are run with access control off only.

${integrations.markdown}

## Not run by this test

- The image handle's \`ocr\`, and the video handle's \`image_to_video\` and \`flf_to_video\`: the catalogue's tiny
  diffusers pipelines (\`tiny-random-image\`, \`tiny-random-video\`) cannot do them; their routes take Xinference's
  forms and are tested in \`test/e2e/images.test.ts\` and \`videos.test.ts\` with a test engine.
- \`convert_ids_to_tokens\`, the audio handle's \`create_embedding\`, \`add_model_replica\`,
  \`terminate_model_replica\`, the reload and relaunch calls: the service has no such routes, and
  answers them with a 404 that says so.
- \`cancel_launch_model\` (its route is tested in \`test/e2e/hub.test.ts\`) and \`abort_cluster\`, which
  would stop the service under test (the service's own is \`POST /v1/cluster/stop\`).
`
    if (process.env.UPDATE_COMPATIBILITY === '1') await writeFile(TABLE, document)
    expect([...clients.problems, ...integrations.problems], 'calls that fail for a reason not written in KNOWN, or now work').to.deep.equal([])
    expect(await readFile(TABLE, 'utf8').catch(() => ''), 'docs/compatibility.md (rerun with UPDATE_COMPATIBILITY=1 to rewrite it)').to.equal(document)
  })
})
