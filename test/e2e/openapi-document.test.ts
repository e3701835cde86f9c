/**
 * /openapi.json against real answers: a real `service-local` with the catalogue's random-weight models (and a model on
 * a local hub, to hold a launch while it downloads), a second one with access control on, and a supervisor with a real
 * worker answer requests to every route their documents list. Each answer (JSON, each event of a stream, the text of
 * /metrics and /docs, error replies in OpenAI's and Anthropic's shapes) must match what the document declares, and a
 * route no test called fails the suite. A typed client generated from the document (openapi-typescript) must compile
 * with the real requests and answers, and the OpenAI routes' schemas must agree with OpenAI's own API description.
 */
import {expect} from 'chai'
import {execa} from 'execa'
import {mkdir, writeFile} from 'node:fs/promises'
import {join} from 'node:path'
import openapiTS, {astToString} from 'openapi-typescript'

import {writeRandomLlamaGguf} from '../../plugins/engine-llama-cpp/src/gguf/random-llama.js'
import {apiKeyOf, passwordOf, writeTestAuthConfig} from '../helpers/auth.js'
import {assertOpenAiSchema, openAiRequired} from '../helpers/conformance.js'
import {FakeHub} from '../helpers/fake-hub.js'
import {type OpenApiDocument, OpenApiChecker, operationKey} from '../helpers/openapi-checker.js'
import {callApi, ROOT, type RunningService, startProgram, startService, temporaryDirectory, until} from '../helpers/service.js'

const REPO = 'test-org/tiny-GGUF'
const HUB_FAMILY = {
  context_length: 2048,
  model_ability: ['chat', 'generate'],
  model_lang: ['en'],
  model_name: 'hub-llm',
  model_specs: [{model_format: 'ggufv2', model_hub: 'huggingface', model_id: REPO, model_size_in_billions: '0_5', model_file_name_template: 'tiny-{quantization}.gguf', quantizations: ['q4_0']}],
  version: 2,
}
const LLM = 'tiny-random-llm'
/** The routes OpenAI's API has too, with the names of its schemas for them. */
const OPENAI_ROUTES = [
  {events: 'CreateChatCompletionStreamResponse', key: 'POST /v1/chat/completions', request: 'CreateChatCompletionRequest', response: 'CreateChatCompletionResponse'},
  {key: 'POST /v1/completions', request: 'CreateCompletionRequest', response: 'CreateCompletionResponse'},
  // OpenAI's request may leave the model out (a stored prompt names it); this service has no stored prompts, so it is required.
  {events: 'ResponseStreamEvent', key: 'POST /v1/responses', response: 'Response'},
  {key: 'GET /v1/responses/{response_id}', response: 'Response'},
  {key: 'GET /v1/responses/{response_id}/input_items', response: 'ResponseItemList'},
  {key: 'POST /v1/embeddings', request: 'CreateEmbeddingRequest', response: 'CreateEmbeddingResponse'},
  {key: 'GET /v1/models', response: 'ListModelsResponse'},
  {key: 'GET /v1/models/{model_uid}', response: 'Model'},
]
/** Routes whose success needs what this test does not make (a Python environment), checked against this document where it is made. */
const SUCCEEDS_ELSEWHERE: Record<string, string> = {'DELETE /v1/virtualenvs/{name}': 'test/e2e/python-environments.test.ts'}
/**
 * Model types whose models this test does not launch: their routes' answers are checked where those models run (against
 * OpenAI's description where it has the route); here each must be documented with a success schema.
 */
const TYPES_CHECKED_ELSEWHERE: Record<string, string> = {
  '@service-toolkit/plugin-model-audio': 'test/e2e/audio.test.ts',
  '@service-toolkit/plugin-model-flexible': 'test/e2e/flexible-onnx.test.ts',
  '@service-toolkit/plugin-model-image': 'test/e2e/images.test.ts',
  '@service-toolkit/plugin-model-video': 'test/e2e/videos.test.ts',
}
const WEATHER_TOOL = {function: {name: 'get_weather', parameters: {properties: {city: {type: 'string'}}, required: ['city'], type: 'object'}}, type: 'function'}

describe('the OpenAPI document against real answers of every route (service-local, access control, a supervisor)', function () {
  let hub: FakeHub
  let service: RunningService
  let secured: RunningService
  let local: OpenApiChecker
  let supervisorChecker: OpenApiChecker | undefined
  let half: number
  const call = (method: string, path: string, options = {}) => local.call(service, method, path, options)
  const ok = async (method: string, path: string, options = {}) => {
    const answer = await call(method, path, options)
    expect(answer.status, `${operationKey(method, path)}: ${JSON.stringify(answer.body).slice(0, 500)}`).to.equal(200)
    return answer
  }

  const refused = async (status: number, method: string, path: string, options = {}, on = service) => {
    const answer = await local.call(on, method, path, options)
    expect(answer.status, `${operationKey(method, path)}: ${JSON.stringify(answer.body)}`).to.equal(status)
    return answer
  }

  before(async () => {
    const directory = await temporaryDirectory()
    const {bytes} = await writeRandomLlamaGguf(join(directory, 'tiny.gguf'))
    half = Math.floor(bytes / 2)
    hub = await FakeHub.start()
    await hub.addRepo(REPO, {'tiny-q4_0.gguf': join(directory, 'tiny.gguf')})
    service = await startService({env: {HF_ENDPOINT: hub.url, MODELSCOPE_ENDPOINT: hub.url}})
    secured = await startService({args: ['--auth-config', await writeTestAuthConfig(directory)]})
    local = new OpenApiChecker((await callApi(service, 'GET', '/openapi.json')).body as OpenApiDocument)
  })

  after(async () => {
    await Promise.all([service?.stop(), secured?.stop()])
    await hub?.stop()
  })

  it('answers the service routes as documented: health, version, plugins, cluster, metrics as text, the docs page as HTML', async () => {
    for (const path of ['/health', '/v1/cluster/version', '/v1/cluster/auth', '/v1/cluster/plugins', '/v1/cluster/info', '/v1/cluster/workers', '/v1/workers', '/v1/autostart/models', '/v1/autostart/models/summary', '/v1/supervisor', '/openapi.json', '/docs', '/metrics']) await ok('GET', path)
    expect((await ok('GET', '/metrics')).body).to.match(/^# HELP /m)
    expect((await refused(400, 'POST', '/token', {body: {password: 'x', username: 'x'}})).body.error.code).to.equal('auth_disabled')
  })

  it('answers login, and refusals for want of credentials, as documented (bearer and x-api-key)', async () => {
    const token = await local.call(secured, 'POST', '/token', {body: {password: passwordOf('root'), username: 'root'}})
    expect(token.status).to.equal(200)
    await refused(401, 'GET', '/v1/models', {}, secured)
    await refused(403, 'GET', '/v1/models', {headers: {authorization: `Bearer ${apiKeyOf('nobody')}`}}, secured)
    expect((await local.call(secured, 'GET', '/v1/models', {headers: {authorization: `Bearer ${token.body.access_token}`}})).status).to.equal(200)
    expect((await local.call(secured, 'GET', '/anthropic/v1/models', {headers: {'x-api-key': apiKeyOf('root')}})).status).to.equal(200)
    expect((await refused(401, 'GET', '/anthropic/v1/models', {}, secured)).body.type).to.equal('error')
  })

  it('answers logout and the revocation of a user’s tokens as documented', async () => {
    const root = {headers: {authorization: `Bearer ${apiKeyOf('root')}`}}
    const {body} = await local.call(secured, 'POST', '/token', {body: {password: passwordOf('nobody'), username: 'nobody'}})
    expect((await local.call(secured, 'POST', '/v1/auth/logout', {headers: {authorization: `Bearer ${body.access_token}`}})).status).to.equal(200)
    await refused(401, 'POST', '/v1/auth/logout', {headers: {authorization: `Bearer ${body.access_token}`}}, secured)
    expect((await local.call(secured, 'POST', '/v1/auth/users/{username}/revoke', {...root, params: {username: 'nobody'}})).status).to.equal(200)
    await refused(404, 'POST', '/v1/auth/users/{username}/revoke', {...root, params: {username: 'ghost'}}, secured)
  })

  it('answers registrations and engines as documented', async () => {
    await ok('POST', '/v1/model_registrations/{model_type}', {body: {model: HUB_FAMILY, persist: false}, params: {model_type: 'LLM'}})
    await ok('POST', '/v1/model_registrations/{model_type}', {body: {model: {...HUB_FAMILY, model_name: 'short-lived'}, persist: false}, params: {model_type: 'LLM'}})
    await ok('GET', '/v1/model_registrations/{model_type}', {params: {model_type: 'LLM'}})
    await ok('GET', '/v1/model_registrations/{model_type}', {params: {model_type: 'LLM'}, query: {detailed: 'true'}})
    await ok('GET', '/v1/model_registrations/{model_type}/{model_name}', {params: {model_name: 'hub-llm', model_type: 'LLM'}})
    await ok('DELETE', '/v1/model_registrations/{model_type}/{model_name}', {params: {model_name: 'short-lived', model_type: 'LLM'}})
    await refused(404, 'GET', '/v1/model_registrations/{model_type}/{model_name}', {params: {model_name: 'short-lived', model_type: 'LLM'}})
    await refused(400, 'POST', '/v1/model_registrations/{model_type}', {body: {model: {model_name: 'x'}, persist: 'yes'}, params: {model_type: 'LLM'}})
    await ok('GET', '/v1/engines/{model_name}', {params: {model_name: LLM}})
    await ok('GET', '/v1/engines/{model_type}/{model_name}', {params: {model_name: 'tiny-random-embedding', model_type: 'embedding'}})
    await ok('GET', '/v1/engines/{engine}/build', {params: {engine: 'llama.cpp'}})
    await ok('GET', '/v1/engine-builds')
    await refused(404, 'GET', '/v1/engines/{engine}/build', {params: {engine: 'vllm'}})
    await ok('GET', '/v1/models/vllm-supported')
    await ok('GET', '/v1/catalogue/search', {query: {q: 'tiny random llm'}})
    await refused(400, 'GET', '/v1/catalogue/search', {query: {limit: 51, q: 'tiny'}})
    await ok('GET', '/v1/virtualenvs')
    await refused(404, 'DELETE', '/v1/virtualenvs/{name}', {params: {name: 'py3.11.7-0000000000000000'}})
    await refused(400, 'GET', '/v1/engines/{model_name}', {params: {model_name: 'no-such-model'}})
  })

  it('answers launches as documented: the estimate, progress while downloading, a cancel, launches of each type', async () => {
    await ok('POST', '/v1/models/memory', {body: {model_engine: 'llama.cpp', model_name: LLM}})
    const hold = hub.hold('tiny-q4_0.gguf', half)
    await ok('POST', '/v1/models', {body: {model_engine: 'llama.cpp', model_name: 'hub-llm', model_uid: 'cancel-me', quantization: 'q4_0'}, query: {wait_ready: 'false'}})
    await hold.reached
    await until(async () => ((await ok('GET', '/v1/models/{model_uid}/progress', {params: {model_uid: 'cancel-me'}})).body.downloaded_bytes === half ? true : undefined), 'the download to reach the hold')
    await ok('POST', '/v1/models/{model_uid}/cancel', {params: {model_uid: 'cancel-me'}})
    hold.release()
    await refused(409, 'POST', '/v1/models/{model_uid}/cancel', {params: {model_uid: 'cancel-me'}})
    await refused(400, 'POST', '/v1/models', {body: {model_name: LLM, replica: 0}})

    await ok('POST', '/v1/models', {body: {model_engine: 'llama.cpp', model_name: LLM, n_ctx: 512}})
    await ok('POST', '/v1/models', {body: {model_name: 'tiny-random-embedding', model_type: 'embedding'}})
    await ok('POST', '/v1/models', {body: {model_name: 'tiny-random-rerank', model_type: 'rerank'}})
    await ok('GET', '/v1/models')
    await ok('GET', '/v1/models/instances')
    await ok('GET', '/v1/models/instances', {query: {model_name: LLM}})
    for (const uid of [LLM, 'tiny-random-embedding', 'tiny-random-rerank']) {
      await ok('GET', '/v1/models/{model_uid}', {params: {model_uid: uid}})
      await ok('GET', '/v1/models/{model_uid}/progress', {params: {model_uid: uid}})
      await ok('GET', '/v1/models/{model_uid}/events', {params: {model_uid: uid}})
    }

    await refused(404, 'GET', '/v1/models/{model_uid}', {params: {model_uid: 'ghost'}})
    await ok('POST', '/v1/autostart/models', {body: {launch: {model_engine: 'llama.cpp', model_name: LLM}}})
    await ok('DELETE', '/v1/autostart/models/{model_uid}', {params: {model_uid: 'tiny-random-rerank'}})
    await refused(400, 'POST', '/v1/autostart/models', {body: {enabled: false, launch: {model_name: LLM}}})
    await ok('GET', '/v1/launch_history')
    await ok('GET', '/v1/launch_history', {query: {model_name: 'hub-llm'}})
  })

  it('answers OpenAI chat and completions as documented, JSON and every event of their streams', async () => {
    const chat = {max_tokens: 6, messages: [{content: 'Hello!', role: 'user'}], model: LLM}
    await ok('POST', '/v1/chat/completions', {body: chat})
    await ok('POST', '/v1/chat/completions', {body: {...chat, stream: true, stream_options: {include_usage: true}}})
    const forced = {...chat, max_tokens: 40, temperature: 0, tool_choice: {function: {name: 'get_weather'}, type: 'function'}, tools: [WEATHER_TOOL]}
    await ok('POST', '/v1/chat/completions', {body: forced})
    const tools = await ok('POST', '/v1/chat/completions', {body: {...forced, stream: true}})
    expect(tools.events!.some((event) => event.choices[0]?.delta?.tool_calls)).to.equal(true)
    await refused(400, 'POST', '/v1/chat/completions', {body: {messages: [], model: LLM}})
    await refused(404, 'POST', '/v1/chat/completions', {body: {...chat, model: 'ghost'}})

    const completion = {max_tokens: 4, model: LLM, prompt: ['Once upon', 'a time']}
    await ok('POST', '/v1/completions', {body: completion})
    await ok('POST', '/v1/completions', {body: {...completion, echo: true, stream: true, stream_options: {include_usage: true}}})
    await refused(400, 'POST', '/v1/completions', {body: {...completion, prompt: 3}})

    await ok('POST', '/v1/chat/completions', {body: {...chat, repetition_penalty: 1.1, request_id: 'documented-1'}})
    await ok('GET', '/v1/requests/{request_id}/progress', {params: {request_id: 'documented-1'}})
    await refused(404, 'GET', '/v1/requests/{request_id}/progress', {params: {request_id: 'never-sent'}})
    await ok('POST', '/v1/models/{model_uid}/requests/{request_id}/abort', {body: {block_duration: 0}, params: {model_uid: LLM, request_id: 'documented-1'}})
    await refused(404, 'POST', '/v1/models/{model_uid}/requests/{request_id}/abort', {body: {}, params: {model_uid: 'ghost', request_id: 'documented-1'}})
    const {body: usage} = await ok('GET', '/v1/usage', {query: {group_by: 'key,model', window: '1h'}})
    // Without access control, requests are under no key.
    expect((usage as {data: Array<{api_key: unknown; model: string}>}).data.some((row) => row.api_key === null && row.model === LLM)).to.equal(true)
    await refused(400, 'GET', '/v1/usage', {query: {since: 'yesterday'}})
  })

  it('answers the Responses API as documented: created, streamed, stored, listed, cancelled and deleted', async () => {
    const request = {input: [{content: 'Hello!', role: 'user'}], instructions: 'Be brief.', max_output_tokens: 6, model: LLM}
    const created = await ok('POST', '/v1/responses', {body: request})
    await ok('POST', '/v1/responses', {body: {...request, max_output_tokens: 40, stream: true, tool_choice: {name: 'get_weather', type: 'function'}, tools: [{...WEATHER_TOOL.function, type: 'function'}]}})
    await ok('POST', '/v1/responses', {body: {...request, stream: true}})
    const id = created.body.id as string
    await ok('GET', '/v1/responses/{response_id}', {params: {response_id: id}})
    await ok('GET', '/v1/responses/{response_id}/input_items', {params: {response_id: id}, query: {limit: 1, order: 'asc'}})
    const background = await ok('POST', '/v1/responses', {body: {...request, background: true}})
    await ok('POST', '/v1/responses/{response_id}/cancel', {params: {response_id: background.body.id}})
    await ok('DELETE', '/v1/responses/{response_id}', {params: {response_id: id}})
    await refused(404, 'GET', '/v1/responses/{response_id}', {params: {response_id: id}})
    await refused(400, 'POST', '/v1/responses', {body: {...request, max_output_tokens: 0}})
  })

  it('answers embeddings and rerank as documented', async () => {
    await ok('POST', '/v1/embeddings', {body: {input: ['The food was delicious', 'The waiter was friendly'], model: 'tiny-random-embedding'}})
    await ok('POST', '/v1/embeddings', {body: {encoding_format: 'base64', input: 'Hello', model: 'tiny-random-embedding'}})
    await refused(400, 'POST', '/v1/embeddings', {body: {input: ' ', model: 'tiny-random-embedding'}})
    await ok('POST', '/v1/rerank', {body: {documents: ['Paris is in France.', 'Cats sleep a lot.'], model: 'tiny-random-rerank', query: 'Where is Paris?', return_documents: true, top_n: 1}})
    await ok('POST', '/v1/rerank', {body: {documents: ['Paris is in France.'], kwargs: '{}', model: 'tiny-random-rerank', query: 'Where is Paris?', return_documents: 'true', return_len: 'true'}})
    await refused(400, 'POST', '/v1/rerank', {body: {documents: [], model: 'tiny-random-rerank', query: 'q'}})
  })

  it("answers the Anthropic routes as documented, their stream's named events, and errors in Anthropic's shape", async () => {
    const message = {max_tokens: 6, messages: [{content: 'Hello!', role: 'user'}], model: LLM}
    await ok('POST', '/anthropic/v1/messages', {body: message})
    await ok('POST', '/v1/messages', {body: message})
    expect((await refused(400, 'POST', '/v1/messages', {body: {...message, max_tokens: 0}})).body.type).to.equal('error')
    const streamed = await ok('POST', '/anthropic/v1/messages', {body: {...message, stream: true}})
    expect(streamed.events!.map((event) => event.type)).to.include.members(['message_start', 'content_block_delta', 'message_stop'])
    await ok('POST', '/anthropic/v1/messages', {body: {...message, max_tokens: 40, stream: true, temperature: 0, tool_choice: {name: 'get_weather', type: 'tool'}, tools: [{input_schema: WEATHER_TOOL.function.parameters, name: 'get_weather'}]}})
    await ok('POST', '/anthropic/v1/messages/count_tokens', {body: {messages: message.messages, model: LLM}})
    await ok('GET', '/anthropic/v1/models')
    await ok('GET', '/anthropic/v1/models/{model_id}', {params: {model_id: LLM}})
    expect((await refused(404, 'GET', '/anthropic/v1/models/{model_id}', {params: {model_id: 'ghost'}})).body.type).to.equal('error')
    await refused(400, 'POST', '/anthropic/v1/messages', {body: {...message, max_tokens: 0}})
  })

  it("answers Ollama's routes as documented, streamed (NDJSON) and whole, and errors in Ollama's shape", async () => {
    for (const path of ['/api/version', '/api/tags', '/api/ps']) await ok('GET', path)
    await ok('POST', '/api/show', {body: {model: LLM}})
    const chat = {messages: [{content: 'Hello!', role: 'user'}], model: LLM, options: {num_predict: 4}}
    await ok('POST', '/api/chat', {body: {...chat, stream: false}})
    await ok('POST', '/api/chat', {body: chat})
    await ok('POST', '/api/generate', {body: {model: LLM, options: {num_predict: 4}, prompt: 'Once', stream: false}})
    await ok('POST', '/api/generate', {body: {model: LLM, options: {num_predict: 4}, prompt: 'Once'}})
    await ok('POST', '/api/embed', {body: {input: ['a', 'b'], model: 'tiny-random-embedding'}})
    await ok('POST', '/api/embeddings', {body: {model: 'tiny-random-embedding', prompt: 'a'}})
    expect((await refused(404, 'POST', '/api/show', {body: {model: 'ghost'}})).body).to.have.all.keys('error')
    await ok('POST', '/api/pull', {body: {model: LLM, stream: false}})
    await ok('POST', '/api/pull', {body: {model: LLM}})
    expect((await refused(409, 'DELETE', '/api/delete', {body: {model: LLM}})).body).to.have.all.keys('error')
  })

  it('answers the cache routes and terminations as documented', async () => {
    await ok('GET', '/v1/cache/models')
    await ok('GET', '/v1/cache/models', {query: {model_name: LLM}})
    await ok('GET', '/v1/cache/models/files', {query: {model_version: 'tiny-random-embedding--ggufv2--f32'}})
    await refused(400, 'GET', '/v1/cache/models/files')
    await refused(409, 'DELETE', '/v1/cache/models', {query: {model_version: 'tiny-random-embedding--ggufv2--f32'}})
    for (const uid of [LLM, 'tiny-random-embedding', 'tiny-random-rerank']) await ok('DELETE', '/v1/models/{model_uid}', {params: {model_uid: uid}})
    await ok('DELETE', '/v1/cache/models', {query: {model_version: 'tiny-random-embedding--ggufv2--f32'}})
    await ok('DELETE', '/api/delete', {body: {model: LLM}})
    await refused(404, 'DELETE', '/v1/models/{model_uid}', {params: {model_uid: LLM}})
  })

  it("answers a supervisor's own routes as documented: a worker joins, beats, and the cluster stops", async () => {
    const supervisor = await startProgram('service-supervisor', ['-H', '127.0.0.1', '-p', '0'])
    const worker = await startProgram('service-worker', ['-e', supervisor.url, '-H', '127.0.0.1'])
    try {
      const checker = (supervisorChecker = new OpenApiChecker((await callApi(supervisor, 'GET', '/openapi.json')).body as OpenApiDocument))
      const workers = await until(async () => {
        const answer = await checker.call(supervisor, 'GET', '/v1/cluster/workers')
        return answer.body.list.length > 0 ? answer.body.list : undefined
      }, 'the worker to join')
      const {address, resources, version} = workers[0]
      expect((await checker.call(supervisor, 'GET', '/v1/workers')).body, "Xinference's shape").to.deep.equal([{models: {}, 'work-ip': address}])
      expect((await checker.call(supervisor, 'POST', '/v1/cluster/workers', {body: {address, instances: [], resources, version}})).status).to.equal(200)
      expect((await checker.call(supervisor, 'POST', '/v1/cluster/workers/heartbeat', {body: {address, instances: [], resources}})).status).to.equal(200)
      expect((await checker.call(supervisor, 'POST', '/v1/cluster/workers/heartbeat', {body: {address: 'http://127.0.0.9:1', instances: [], resources}})).status).to.equal(404)
      expect((await checker.call(supervisor, 'GET', '/v1/cluster/info')).body.mode).to.equal('cluster')
      expect((await checker.call(supervisor, 'GET', '/v1/engine-builds')).body, 'a supervisor builds nothing').to.deep.equal({data: []})
      expect((await checker.call(supervisor, 'POST', '/v1/cluster/stop')).body).to.deep.equal({unreachable_workers: []})
      await Promise.all([supervisor.process, worker.process])
    } finally {
      await Promise.all([supervisor.stop(), worker.stop()])
    }
  })

  it('compiles a typed client generated from the document (openapi-typescript) with the real requests and answers', async function () {
    this.timeout(120_000)
    const directory = join(await temporaryDirectory(), 'client')
    await mkdir(directory)
    const document = {...local.document, paths: {...local.document.paths, ...supervisorChecker?.document.paths}}
    await writeFile(join(directory, 'api.ts'), astToString(await openapiTS(document as never)))
    const samples = [local, supervisorChecker!].flatMap((checker) => [...checker.samples.entries()])
    const lines = samples.flatMap(([key, {reply, request}], index) => {
      const [method, path] = key.split(' ')
      const at = `'${path}', '${method.toLowerCase()}'`
      return [`export const reply${index}: Reply<${at}> = ${JSON.stringify(reply)}`, ...(request === undefined ? [] : [`export const request${index}: Request<${at}> = ${JSON.stringify(request)}`])]
    })
    await writeFile(
      join(directory, 'usage.ts'),
      `import type {paths} from './api.js'
type Reply<P extends keyof paths, M extends keyof paths[P]> = paths[P][M] extends {responses: {200: {content: {'application/json': infer T}}}} ? T : never
type Request<P extends keyof paths, M extends keyof paths[P]> = paths[P][M] extends {requestBody?: {content: {'application/json': infer T}}} ? T : never
${lines.join('\n')}
`,
    )
    const tsc = await execa('node', [join(ROOT, 'node_modules/typescript/bin/tsc'), '--noEmit', '--strict', '--target', 'es2022', '--module', 'nodenext', join(directory, 'usage.ts')], {reject: false})
    expect(tsc.exitCode, `${tsc.stdout}\n${tsc.stderr}`).to.equal(0)
    expect(samples.length).to.be.at.least(30)
  })

  it("agrees with OpenAI's API description on the routes both have: real requests and answers valid under both, OpenAI's required fields required here", () => {
    const operation = (key: string) => local.operation(key)
    for (const {events, key, request, response} of OPENAI_ROUTES) {
      const {reply, request: sent} = local.samples.get(key)!
      assertOpenAiSchema(response, reply)
      const ours = operation(key).responses['200'].content!['application/json'].schema
      expect(ours.required, `${key}: the answer's fields OpenAI requires`).to.include.members(openAiRequired(response))
      if (request) {
        assertOpenAiSchema(request, sent)
        const body = operation(key).requestBody!.content['application/json'].schema
        expect(body.required, `${key}: the request's required fields`).to.have.members(openAiRequired(request))
      }

      if (events) for (const event of local.streams.get(key)!) assertOpenAiSchema(events, event)
    }

    const error = local.document.components.responses.Error.content!['application/json'].schema as {required: string[]; properties: {error: {required: string[]}}}
    expect(error.required).to.include.members(openAiRequired('ErrorResponse'))
    expect(error.properties.error.required).to.include.members(openAiRequired('Error'))
    // Anthropic's routes (under /anthropic, and POST /v1/messages) and Ollama's answer in their own shapes, as their document says.
    const ownShape = (key: string) => /AnthropicError|OllamaError/.test(JSON.stringify(operation(key).responses.default))
    for (const [key, body] of local.errors) if (!ownShape(key)) assertOpenAiSchema('ErrorResponse', body)
  })

  it('has called every route of every document, with an answer that matched', () => {
    const answered = new Set([...local.answered.keys(), ...(supervisorChecker?.answered.keys() ?? [])])
    const elsewhere = local.operations().filter((key) => local.operation(key)['x-plugin'] in TYPES_CHECKED_ELSEWHERE)
    for (const key of elsewhere) expect(local.operation(key).responses['200'], `${key}: its success`).to.have.property('content')
    const operations = new Set([...local.operations(), ...(supervisorChecker?.operations() ?? [])].filter((key) => !elsewhere.includes(key)))
    expect(operations.size).to.be.at.least(38)
    expect([...operations].filter((operation) => !answered.has(operation)), 'routes no test called').to.deep.equal([])
    const succeeded = (key: string) => key in SUCCEEDS_ELSEWHERE || local.answered.get(key)?.has(200) || supervisorChecker?.answered.get(key)?.has(200)
    expect([...operations].filter((operation) => !succeeded(operation)), 'routes never answered 200').to.deep.equal([])
  })
})
