/**
 * Usage per API key, quotas and model scopes of a real `service-local` under the access-control config of
 * docs/usage-and-quotas.md, with two copies of the generated tiny llama.cpp model and the official OpenAI client.
 * bob's key has a day quota of 2 requests and the scope `tiny*`; alice's has neither; admin's is named `ops`.
 */
import Anthropic from '@anthropic-ai/sdk'
import {expect} from 'chai'
import {execa} from 'execa'
import {randomBytes} from 'node:crypto'
import {mkdir, readFile, stat, writeFile} from 'node:fs/promises'
import {join} from 'node:path'
import OpenAI from 'openai'

import {checkAndClose, openBrowser} from '../helpers/browser.js'
import {writeTinyChatModel} from '../helpers/models.js'
import {scrapeMetrics} from '../helpers/prometheus.js'
import {readmeBlock} from '../helpers/readme.js'
import {callApi, type RunningService, SERVICECTL, servicectl, startService, temporaryDirectory} from '../helpers/service.js'

const PAGE = 'docs/usage-and-quotas.md'
const ADMIN = 'sk-72tkvudyGLPMi'
const ALICE = 'sk-35tkasdyGLYMy'
const BOB = 'sk-ZOTLIY4gt9w11'
const MODEL = 'tiny-chat'
/** The same weights under a uid outside bob's scope. */
const OTHER = 'other-chat'

describe('usage, quotas and model scopes per API key', function () {
  let home: string
  let config: string
  let service: RunningService
  /** Tokens of the answers each key got, as the answers' usage says. */
  const answered = new Map<string, {requests: number; prompt: number; completion: number}>()

  const openai = (apiKey: string) => new OpenAI({apiKey, baseURL: `${service.url}/v1`, maxRetries: 0})
  const as = (apiKey: string) => ({authorization: `Bearer ${apiKey}`})
  const usage = async (apiKey: string, query = '') => callApi(service, 'GET', `/v1/usage${query}`, undefined, as(apiKey))

  async function chat(apiKey: string, name: string, model = MODEL) {
    const completion = await openai(apiKey).chat.completions.create({max_tokens: 6, messages: [{content: `hello from ${name}`, role: 'user'}], model, temperature: 0})
    const total = answered.get(name) ?? {completion: 0, prompt: 0, requests: 0}
    answered.set(name, {completion: total.completion + completion.usage!.completion_tokens, prompt: total.prompt + completion.usage!.prompt_tokens, requests: total.requests + 1})
  }

  before(async () => {
    const directory = await temporaryDirectory()
    home = await temporaryDirectory('service-home-')
    config = join(directory, 'auth.json')
    await writeFile(config, (await readmeBlock('usage-config', PAGE)).replace('<openssl rand -hex 32>', randomBytes(32).toString('hex')))
    service = await startService({args: ['--auth-config', config], env: {SERVICE_RESTORE_MODELS: 'false'}, home})
    const {family} = await writeTinyChatModel(directory, MODEL)
    expect((await callApi(service, 'POST', '/v1/model_registrations/LLM', {model: family, persist: false}, as(ADMIN))).status).to.equal(200)
    for (const uid of [MODEL, OTHER]) {
      const launched = await callApi(service, 'POST', '/v1/models', {model_engine: 'llama.cpp', model_name: MODEL, model_uid: uid}, as(ADMIN))
      expect(launched.status, JSON.stringify(launched.body)).to.equal(200)
    }
  })

  after(async () => service?.stop())

  it("keeps each key's requests and tokens by model, as the answers' usage says", async () => {
    await chat(ALICE, 'alice-laptop')
    await chat(ALICE, 'alice-laptop')
    await chat(BOB, 'bob-key1')
    const {body, status} = await usage(ADMIN, '?group_by=key,model')
    expect(status).to.equal(200)
    expect(body).to.include({group_by: 'key,model', object: 'usage'})
    const rows = Object.fromEntries(body.data.map((row: any) => [row.api_key, row]))
    for (const [name, {completion, prompt, requests}] of answered)
      expect(rows[name], name).to.deep.equal({api_key: name, completion_tokens: completion, model: MODEL, prompt_tokens: prompt, requests, total_tokens: prompt + completion})
    expect(body.data).to.have.length(2)
    const byModel = (await usage(ADMIN, '?group_by=model')).body.data
    expect(byModel).to.have.length(1)
    expect(byModel[0]).to.include({api_key: null, model: MODEL, requests: 3})
  })

  it('shows a key only its own usage, and refuses to show it another', async () => {
    const own = await usage(ALICE)
    expect(own.body.data.map((row: any) => row.api_key)).to.deep.equal(['alice-laptop'])
    const other = await usage(ALICE, '?api_key=bob-key1')
    expect(other.status).to.equal(403)
    expect(other.body.error).to.include({code: 'forbidden', param: 'api_key'})
    expect(other.body.error.message).to.contain('yours: "alice-laptop"')
    expect((await usage(ADMIN, '?api_key=bob-key1')).body.data.map((row: any) => row.api_key)).to.deep.equal(['bob-key1'])
    expect((await usage(ADMIN, '?window=1h&since=0')).body.since, 'since wins over window').to.equal('1970-01-01T00:00:00.000Z')
    expect((await usage(ADMIN, '?since=2000000000&until=1000000000')).body.error).to.include({param: 'since'})
    expect((await usage(ADMIN, '?api_key=a&api_key=b')).body.error.message).to.contain('`api_key` must be given once')
    expect((await usage(ADMIN, '?since=yesterday')).body.error.message).to.contain('`since` must be an ISO 8601 time')
    expect((await callApi(service, 'GET', '/v1/usage')).status).to.equal(401)
  })

  it('runs the documented call as written', async () => {
    const {stdout} = await execa('bash', ['-euo', 'pipefail', '-c', (await readmeBlock('usage-call', PAGE)).replaceAll('http://127.0.0.1:9997', service.url)])
    const {data} = JSON.parse(stdout)
    expect(data).to.deep.equal([{api_key: 'alice-laptop', completion_tokens: answered.get('alice-laptop')!.completion, model: MODEL, prompt_tokens: answered.get('alice-laptop')!.prompt, requests: 2, total_tokens: answered.get('alice-laptop')!.prompt + answered.get('alice-laptop')!.completion}])
  })

  it('prints the usage with `servicectl usage` as documented, as a table and as JSON', async () => {
    const alice = answered.get('alice-laptop')!
    const bin = join(await temporaryDirectory(), 'bin')
    await mkdir(bin)
    await writeFile(join(bin, 'servicectl'), `#!/bin/sh\nexec node ${SERVICECTL} "$@"\n`, {mode: 0o755})
    const env = {NO_COLOR: '1', PATH: `${bin}:${process.env.PATH}`, SERVICE_ENDPOINT: service.url}
    const table = await execa('bash', ['-euo', 'pipefail', '-c', await readmeBlock('usage-cli', PAGE)], {env, reject: false})
    expect(table.exitCode, table.stderr).to.equal(0)
    const lines = table.stdout.trim().split('\n')
    expect(lines[0].split(/\s{2,}/)).to.deep.equal(['Key', 'Model', 'Requests', 'Prompt tokens', 'Completion tokens', 'Total tokens'])
    expect(lines.slice(2).map((line) => line.trim().split(/\s+/))).to.deep.equal([['alice-laptop', MODEL, '2', String(alice.prompt), String(alice.completion), String(alice.prompt + alice.completion)]])
    const json = await servicectl(['usage', '--endpoint', service.url, '--api-key', ADMIN, '--group-by', 'key', '--json'])
    expect(JSON.parse(json.stdout).data.map((row: any) => [row.api_key, row.model])).to.have.deep.members([['alice-laptop', null], ['bob-key1', null]])
    const refused = await servicectl(['usage', '--endpoint', service.url, '--api-key', ALICE, '--key', 'bob-key1'])
    expect(refused.exitCode).to.equal(1)
    expect(refused.stderr).to.contain('only an admin may see the usage of another key')
  })

  it("labels metrics with the key's name, never the key", async () => {
    const response = await fetch(`${service.url}/metrics`, {headers: as(ADMIN)})
    const text = await response.text()
    for (const key of [ADMIN, ALICE, BOB]) expect(text).not.to.contain(key)
    const families = await scrapeMetrics(service.url, as(ADMIN))
    const requests = families.get('service_api_key_requests_total')!.metrics
    expect(requests.map(({labels, value}) => [labels?.api_key, labels?.model_name, Number(value)])).to.have.deep.members([
      ['alice-laptop', MODEL, 2],
      ['bob-key1', MODEL, 1],
    ])
    const tokens = families.get('service_api_key_tokens_total')!.metrics.filter(({labels}) => labels?.api_key === 'alice-laptop' && labels.kind === 'generation')
    expect(Number(tokens[0].value)).to.equal(answered.get('alice-laptop')!.completion)
  })

  it('shows a scoped key only the models in its scope, and refuses the others naming model and scope', async () => {
    const ids = async (apiKey: string, path: string, pick: (body: any) => string[]) => pick((await callApi(service, 'GET', path, undefined, as(apiKey))).body).sort()
    const openaiList = (body: any) => body.data.map((model: any) => model.id)
    const ollamaList = (body: any) => body.models.map((model: any) => model.name)
    expect(await ids(BOB, '/v1/models', openaiList)).to.deep.equal([MODEL])
    expect(await ids(ALICE, '/v1/models', openaiList)).to.deep.equal([OTHER, MODEL])
    for (const path of ['/api/tags', '/api/ps']) expect((await ids(BOB, path, ollamaList)).map((name) => name.replace(/:latest$/, '')), path).to.deep.equal([MODEL])
    expect(await ids(BOB, '/v1/models/instances', (body) => body.map((instance: any) => instance.model_uid))).to.deep.equal([MODEL])

    const refused = await openai(BOB)
      .chat.completions.create({messages: [{content: 'hi', role: 'user'}], model: OTHER})
      .catch((error: unknown) => error)
    expect(refused).to.be.instanceOf(OpenAI.PermissionDeniedError)
    expect((refused as Error).message).to.contain(`may use only the models "tiny*", and not "${OTHER}"`)
    expect((await callApi(service, 'GET', `/v1/models/${OTHER}`, undefined, as(BOB))).status).to.equal(403)
    expect((await usage(BOB)).body.data[0]).to.include({requests: 1}, 'a refused request is not counted')
  })

  it("answers 429 with Retry-After once the quota is spent, in OpenAI's, Anthropic's and Ollama's shapes", async () => {
    await chat(BOB, 'bob-key1')
    const refused = await openai(BOB)
      .chat.completions.create({messages: [{content: 'hi', role: 'user'}], model: MODEL})
      .catch((error: unknown) => error)
    expect(refused).to.be.instanceOf(OpenAI.RateLimitError)
    const error = refused as InstanceType<typeof OpenAI.RateLimitError>
    expect(error.code).to.equal('quota_exceeded')
    expect(error.message).to.contain('the API key "bob-key1" of user "bob" has used its quota of 2 requests per day (requests_per_day)')
    const retryAfter = Number(error.headers?.get('retry-after'))
    const midnight = new Date()
    midnight.setUTCHours(24, 0, 0, 0)
    expect(retryAfter).to.be.within(1, Math.ceil((midnight.getTime() - Date.now()) / 1000) + 1)

    const anthropic = await fetch(`${service.url}/anthropic/v1/messages`, {
      body: JSON.stringify({max_tokens: 4, messages: [{content: 'hi', role: 'user'}], model: MODEL}),
      headers: {'anthropic-version': '2023-06-01', 'content-type': 'application/json', 'x-api-key': BOB},
      method: 'POST',
    })
    expect(anthropic.status).to.equal(429)
    expect(Number(anthropic.headers.get('retry-after'))).to.be.within(1, retryAfter + 1)
    const body = await anthropic.json()
    expect(body).to.have.keys('type', 'error')
    expect(body).to.deep.include({type: 'error'})
    expect(body.error.type).to.equal('rate_limit_error')
    expect(body.error.message).to.contain('requests_per_day')
    const client = new Anthropic({apiKey: BOB, baseURL: `${service.url}/anthropic`, maxRetries: 0})
    expect(await client.messages.create({max_tokens: 4, messages: [{content: 'hi', role: 'user'}], model: MODEL}).catch((error_: unknown) => error_)).to.be.instanceOf(Anthropic.RateLimitError)

    const ollama = await callApi(service, 'POST', '/api/chat', {messages: [{content: 'hi', role: 'user'}], model: MODEL, stream: false}, as(BOB))
    expect(ollama.status).to.equal(429)
    expect(ollama.body.error, "Ollama's shape: the message itself").to.be.a('string').and.contain('requests_per_day')

    expect((await usage(BOB)).status, 'its usage stays readable').to.equal(200)
    const answers = (await scrapeMetrics(service.url, as(ADMIN))).get('service_requests_total')!.metrics
    const refusals = answers.filter(({labels}) => labels?.status === '429').map(({labels, value}) => [labels?.api_key, labels?.route, Number(value)])
    expect(refusals).to.have.deep.members([['bob-key1', '/v1/chat/completions', 1], ['bob-key1', '/anthropic/v1/messages', 2], ['bob-key1', '/api/chat', 1]])
    await chat(ALICE, 'alice-laptop')
  })

  it("shows a user their own keys' usage in the web interface, and an admin every key's", async function () {
    this.timeout(120_000)
    const browser = await openBrowser(service.url)
    try {
      const {page} = browser
      const logIn = async (username: string, password: string) => {
        await page.goto(`${service.url}/ui/login?next=%2Fui%2Fusage`)
        await page.getByRole('textbox', {name: 'Username'}).fill(username)
        await page.getByLabel('Password').fill(password)
        await page.getByRole('button', {name: 'Log in'}).click()
        await page.waitForURL(`${service.url}/ui/usage`)
      }

      const keysShown = async () => (await page.locator('tbody th').allTextContents()).sort()
      await logIn('alice', 'change me too')
      await page.getByRole('rowheader', {name: 'alice-laptop'}).waitFor()
      expect(await keysShown()).to.deep.equal(['alice-laptop'])
      await page.getByRole('button', {name: 'Log out'}).click()
      await page.waitForURL(`${service.url}/ui/login`)

      await logIn('admin', 'change me')
      await page.getByRole('rowheader', {name: 'alice-laptop'}).waitFor()
      expect(await keysShown()).to.deep.equal(['alice-laptop', 'bob-key1'])
      const alice = answered.get('alice-laptop')!
      const cells = await page.getByRole('row', {name: /alice-laptop/}).getByRole('cell').allTextContents()
      expect(cells).to.deep.equal([MODEL, String(alice.requests), String(alice.prompt), String(alice.completion), String(alice.prompt + alice.completion)])
      await page.getByRole('combobox', {name: 'By'}).selectOption('model')
      await page.getByRole('rowheader', {name: 'all'}).waitFor()
    } finally {
      await checkAndClose(browser)
    }
  })

  it('keeps the usage and the day quotas across a restart, in a private file', async () => {
    const before = (await usage(ADMIN)).body.data
    await service.stop()
    const file = join(home, 'usage.json')
    expect((await stat(file)).mode & 0o777).to.equal(0o600)
    expect(await readFile(file, 'utf8')).not.to.contain(ALICE)
    service = await startService({args: ['--auth-config', config], env: {SERVICE_RESTORE_MODELS: 'false'}, home})
    expect((await usage(ADMIN)).body.data).to.deep.equal(before)
    const refused = await callApi(service, 'POST', '/v1/chat/completions', {messages: [{content: 'hi', role: 'user'}], model: MODEL}, as(BOB))
    expect(refused.status).to.equal(429)
  })
})
