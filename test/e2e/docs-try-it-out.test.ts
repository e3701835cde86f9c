/**
 * /docs "Try it out" with the examples /openapi.json gives, on a real `service-local` running the catalogue's
 * tiny-random models: every operation carries an example for its body and each of its parameters (so a new route
 * without one fails here), each example is sent as swagger-ui sends it (the example body as it is, the example
 * parameters in the path and the query; a form's every field) and succeeds, and in a real Chromium "Try it out" then
 * "Execute" answers 200 on the chat route and on an upload route.
 */
import {expect} from 'chai'
import {readFile} from 'node:fs/promises'

import {writeTestAudio} from '../helpers/audio.js'
import {openBrowser} from '../helpers/browser.js'
import {solidPng} from '../helpers/media.js'
import {callApi, type RunningService, startService, temporaryDirectory} from '../helpers/service.js'

interface Parameter {
  name: string
  in: 'path' | 'query'
  example?: unknown
}

interface MediaType {
  example?: unknown
  schema: {properties?: Record<string, {example?: unknown; format?: string}>; required?: string[]}
}

interface Operation {
  operationId: string
  parameters?: Parameter[]
  requestBody?: {content: Record<string, MediaType>}
  tags: string[]
}

type Operations = Array<{key: string; method: string; path: string; operation: Operation}>

/** The launch route's example launches tiny-random-llm, which most examples name; these are launched beside it. */
const ALSO_LAUNCHED = [
  {model_engine: 'llama.cpp', model_name: 'tiny-random-embedding'},
  {model_engine: 'llama.cpp', model_name: 'tiny-random-rerank'},
  {model_engine: 'whisper.cpp', model_name: 'tiny-random-whisper', model_type: 'audio'},
]
/**
 * Models whose engines need a Python environment (diffusers, transformers, piper) or an ONNX graph the test writes,
 * minutes of work on the two shared cores this suite runs on, by the model an example names; the test named runs
 * them for real. Here their examples must pass every check of the route and reach the lookup of the model, which
 * answers 404 as it is not running. Animating a picture has no tiny model: those examples name the smallest
 * catalogue models that do it.
 */
const MODELS_NOT_LAUNCHED: Record<string, string> = {
  'my-linear': "test/e2e/readme.test.ts (the flexible block of docs/flexible.md registers it)",
  'tiny-random-image': 'test/e2e/diffusers.test.ts',
  'tiny-random-ocr': 'test/e2e/transformers-ocr.test.ts',
  'tiny-random-piper': 'test/e2e/audio-piper.test.ts',
  'tiny-random-video': 'test/e2e/diffusers.test.ts',
  'Wan2.1-flf2v-14B-720p': 'none: 14B parameters',
  'Wan2.2-ti2v-5B': 'none: 5B parameters',
}
/** Routes whose success needs a state that no example can name; their example must be answered with the refusal given, not a 400 about a field. */
const NEEDS_STATE: Record<string, {status: number; why: string}> = {
  'DELETE /v1/virtualenvs/{name}': {status: 404, why: 'only an environment a launch made can be removed (python-environments.test.ts)'},
  'GET /v1/images/files/{id}': {status: 404, why: 'the id is one a generation with response_format url answers'},
  'GET /v1/video/files/{id}': {status: 404, why: 'the id is one a generation with response_format url answers'},
  'POST /token': {status: 400, why: 'access control is off, so there is nothing to log in to (docs-page.test.ts logs in with it on)'},
  'POST /v1/models/{model_uid}/cancel': {status: 409, why: 'only a launch in progress can be cancelled, and the example model is running'},
  'GET /v1/responses/{response_id}': {status: 404, why: 'the id is one a stored response has (responses-api.test.ts)'},
  'DELETE /v1/responses/{response_id}': {status: 404, why: 'the id is one a stored response has (responses-api.test.ts)'},
  'GET /v1/responses/{response_id}/input_items': {status: 404, why: 'the id is one a stored response has (responses-api.test.ts)'},
  'POST /v1/responses/{response_id}/cancel': {status: 404, why: 'the id is one a background response has (responses-api.test.ts)'},
  'DELETE /api/delete': {status: 409, why: "the example model's weights are in use while it runs; weights no model uses are deleted (ollama-pull.test.ts)"},
  'GET /v1/requests/{request_id}/progress': {status: 404, why: 'the id is one a request named with request_id (xinference-clients.test.ts)'},
  'POST /v1/auth/logout': {status: 400, why: 'access control is off, so there is no token to revoke (login-security.test.ts)'},
  'POST /v1/auth/users/{username}/revoke': {status: 400, why: 'access control is off, so there are no tokens to revoke (login-security.test.ts)'},
}
/**
 * The order the examples run in: the launch first (it starts the model the others name), then the rest as the document
 * lists them, then the deletions, the model's termination before the removal of its cached files, which is refused
 * while it runs.
 */
const FIRST = 'POST /v1/models'
const LAST = ['DELETE /v1/models/{model_uid}', 'DELETE /v1/cache/models', 'DELETE /v1/model_registrations/{model_type}/{model_name}']
const PICTURE = solidPng(64, 64, [200, 40, 40])

const exampleModel = (operation: Operation) => (Object.values(operation.requestBody?.content ?? {})[0]?.example as {model?: string} | undefined)?.model

function operationsOf(document: {paths: Record<string, Record<string, Operation>>}): Operations {
  const all = Object.entries(document.paths).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, operation]) => ({key: `${method.toUpperCase()} ${path}`, method: method.toUpperCase(), operation, path})),
  )
  const rank = ({key}: {key: string}) => (key === FIRST ? -1 : LAST.includes(key) ? LAST.indexOf(key) + 1 : 0)
  return all.sort((a, b) => rank(a) - rank(b))
}

/**
 * The request swagger-ui's "Try it out" makes of an operation: its example parameters in the path and the query, and
 * its example body as JSON; for a multipart route every field of the form, each with its example (text as it is,
 * anything else as JSON) or empty, and a file in each file field the route requires (else its first one): the one
 * `uploads` gives for the field, else a picture.
 */
async function tryOut(service: RunningService, {method, operation, path}: Operations[number], uploads: Record<string, Blob> = {}): Promise<{status: number; body: unknown}> {
  const parameters = operation.parameters ?? []
  let url = path
  for (const {example, name} of parameters.filter((p) => p.in === 'path')) url = url.replace(`{${name}}`, encodeURIComponent(String(example)))
  const query = new URLSearchParams(parameters.filter((p) => p.in === 'query').map(({example, name}) => [name, String(example)]))
  if (query.size > 0) url += `?${query}`
  const [[type, media] = []] = Object.entries(operation.requestBody?.content ?? {})
  let body: BodyInit | undefined
  const headers: Record<string, string> = {accept: 'application/json'}
  if (type === 'multipart/form-data') {
    const form = new FormData()
    const files = Object.entries(media.schema.properties ?? {}).filter(([, {format}]) => format === 'binary').map(([name]) => name)
    const required = files.filter((name) => media.schema.required?.includes(name))
    const picked = new Set(required.length > 0 ? required : files.slice(0, 1))
    for (const [name, {example = ''}] of Object.entries(media.schema.properties ?? {}))
      if (picked.has(name)) form.append(name, uploads[name] ?? new Blob([PICTURE], {type: 'image/png'}), name)
      else form.append(name, typeof example === 'string' ? example : JSON.stringify(example))
    body = form
  } else if (type) {
    body = JSON.stringify(media.example)
    headers['content-type'] = type
  }

  const response = await fetch(`${service.url}${url}`, {body, headers, method})
  const text = await response.text()
  let parsed: unknown = text
  try {
    parsed = JSON.parse(text)
  } catch {}

  return {body: parsed, status: response.status}
}

describe('/docs "Try it out": every operation\'s example succeeds on a service with the tiny-random models', function () {
  this.timeout(300_000)
  let service: RunningService
  let operations: Operations
  let recording: string
  /** The audio routes' file field takes a recording. */
  let uploads: Record<string, Blob>

  before(async () => {
    service = await startService()
    operations = operationsOf((await callApi(service, 'GET', '/openapi.json')).body)
    recording = await writeTestAudio(await temporaryDirectory(), 'wav', 1)
    uploads = {file: new Blob([await readFile(recording)], {type: 'audio/wav'})}
  })

  after(async () => service?.stop())

  it('gives every operation an example of its body and of each of its parameters', () => {
    const missing = operations.flatMap(({key, operation}) => [
      ...(operation.parameters ?? []).filter(({example}) => example === undefined).map(({name}) => `${key}: parameter ${name}`),
      ...Object.entries(operation.requestBody?.content ?? {})
        .filter(([, {example}]) => example === undefined)
        .map(([type]) => `${key}: ${type} body`),
    ])
    expect(missing, 'operations without an example (RouteDefinition.example)').to.deep.equal([])
  })

  it('sends each example as "Try it out" would: 2xx, or the refusal its route needs a state for, never a 400 about a field', async () => {
    for (const launch of [undefined, ...ALSO_LAUNCHED]) {
      const answer = launch ? await callApi(service, 'POST', '/v1/models', launch) : await tryOut(service, operations[0])
      expect(answer.status, `launching ${launch?.model_name ?? FIRST}: ${JSON.stringify(answer.body)}`).to.equal(200)
    }

    for (const entry of operations.slice(1)) {
      const answer = await tryOut(service, entry, uploads)
      const seen = `${entry.key}: ${answer.status} ${JSON.stringify(answer.body).slice(0, 400)}`
      const needs = NEEDS_STATE[entry.key]
      if (needs) expect(answer.status, `${seen} (${needs.why})`).to.equal(needs.status)
      else if (MODELS_NOT_LAUNCHED[exampleModel(entry.operation) ?? ''])
        expect([answer.status, (answer.body as {error?: {code?: string}}).error?.code], `${seen} (the model is not running)`).to.deep.equal([404, 'model_not_found'])
      else expect(answer.status, seen).to.be.within(200, 299)
    }
  })

  it('"Try it out" then "Execute" in Chromium: the chat route and an upload route (a transcription) answer 200', async function () {
    const launched = await callApi(service, 'POST', '/v1/models', {model_engine: 'llama.cpp', model_name: 'tiny-random-llm'})
    expect(launched.status, JSON.stringify(launched.body)).to.equal(200)
    const browser = await openBrowser(service.url)
    try {
      const {page} = browser
      await page.goto(`${service.url}/docs`)
      const execute = async (id: string, upload?: string) => {
        const operation = page.locator(id)
        await operation.locator('.opblock-summary-control').click()
        await operation.locator('.try-out__btn').click()
        if (upload) await operation.locator('input[type=file]').first().setInputFiles(upload)
        await operation.locator('.execute').click()
        const status = operation.locator('.live-responses-table .response .response-col_status')
        await status.waitFor()
        const shown = await operation.locator('.live-responses-table .response-col_description .microlight').first().innerText()
        return {body: JSON.parse(shown), status: (await status.innerText()).trim()}
      }

      const chat = await execute('#operations-LLM-postV1ChatCompletions')
      expect(chat.status, JSON.stringify(chat.body)).to.equal('200')
      expect(chat.body).to.have.nested.property('choices[0].message.role', 'assistant')
      // swagger-ui sends every field of a form, those without an example empty: the route takes them as not given.
      const transcription = await execute('#operations-audio-postV1AudioTranscriptions', recording)
      expect(transcription.status, JSON.stringify(transcription.body)).to.equal('200')
      expect(transcription.body).to.have.property('text').that.is.a('string')
      browser.check()
    } finally {
      await browser.close()
    }
  })
})
