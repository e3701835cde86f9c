/**
 * The compatibility layer for Xinference's clients, in process: errors answered with `detail` beside OpenAI's envelope
 * (read by the `openai` client as before), Anthropic's routes outside /anthropic answering in Anthropic's shape and
 * taking `x-api-key`, Xinference's launch fields accepted or refused with why, its text booleans and `kwargs` text,
 * and requests named with `request_id` aborted by it. test/e2e/xinference-clients.test.ts drives the real clients.
 */
import Anthropic from '@anthropic-ai/sdk'
import {expect} from 'chai'
import OpenAI from 'openai'

import type {RouteDefinition} from '../../src/kernel/contracts.js'

import {AccessControl} from '../../src/auth/access-control.js'
import {parseAuthConfig} from '../../src/auth/config.js'
import {ServiceError} from '../../src/kernel/errors.js'
import * as s from '../../src/kernel/schema.js'
import {launchSchema} from '../../src/protocol/launch.js'
import {type AppOptions, createApp} from '../../src/server/app.js'
import {listen, type Listening} from '../../src/server/listen.js'
import {NamedRequests} from '../../src/server/named-requests.js'
import {checkQuery} from '../../src/server/query.js'
import {xinferenceRoutes} from '../../src/server/routes/xinference.js'
import {apiKeyOf, testAuthConfig} from '../helpers/auth.js'

const quiet = {debug() {}, error() {}, info() {}, warn() {}}
const refusal = (run: () => unknown): ServiceError => {
  try {
    run()
  } catch (error) {
    return error as ServiceError
  }

  return expect.fail('it was not refused')
}

/** A stand-in generation that runs until its request is stopped, then answers why. */
const slowRoute: RouteDefinition = {
  body: s.object({model: s.string(), request_id: s.optional(s.string())}),
  async handler({signal}) {
    await new Promise((resolve) => signal.addEventListener('abort', resolve, {once: true}))
    throw signal.reason
  },
  method: 'POST',
  path: '/v1/slow',
  permission: 'models:read',
  summary: 'stand-in',
}
const refusingRoute = (path: string, errorStyle?: 'anthropic'): RouteDefinition => ({
  async handler() {
    throw new ServiceError(400, 'invalid_request', '`max_tokens` must be an integer >= 1 (got 0).', 'max_tokens')
  },
  errorStyle,
  method: 'POST',
  path,
  permission: 'models:read',
  summary: 'stand-in',
})

async function serve(routes: RouteDefinition[], extra: Partial<AppOptions> = {}): Promise<Listening> {
  const models = {get: (uid: string) => (uid === 'tiny' ? ({} as never) : expect.fail(`no model ${uid}`)), list: () => []}
  const options: AppOptions = {log: quiet, models: models as never, routes: routes.map((definition) => ({definition, plugin: 'test'})), version: '0.0.0', ...extra}
  return listen(createApp(options), {host: '127.0.0.1', port: 0})
}

describe('Xinference compatibility', () => {
  describe('error answers', () => {
    let server: Listening
    before(async () => {
      const access = new AccessControl(parseAuthConfig(testAuthConfig(), 'auth.json'))
      server = await serve([refusingRoute('/v1/refuse'), refusingRoute('/v1/messages', 'anthropic')], {access})
    })
    after(() => server.close())

    it("carry Xinference's detail beside OpenAI's envelope, which the openai client still reads", async () => {
      const response = await fetch(`${server.url}/v1/refuse`, {headers: {authorization: `Bearer ${apiKeyOf('root')}`}, method: 'POST'})
      const body = await response.json()
      expect(body).to.deep.equal({
        detail: '`max_tokens` must be an integer >= 1 (got 0).',
        error: {code: 'invalid_request', message: '`max_tokens` must be an integer >= 1 (got 0).', param: 'max_tokens', type: 'invalid_request_error'},
      })
      const openai = new OpenAI({apiKey: apiKeyOf('root'), baseURL: `${server.url}/v1`, maxRetries: 0})
      const error = await openai.post('/refuse').catch((caught: unknown) => caught)
      expect(error).to.be.instanceOf(OpenAI.BadRequestError)
      expect((error as InstanceType<typeof OpenAI.BadRequestError>).param).to.equal('max_tokens')
    })

    it('say which permission is missing in detail too', async () => {
      const response = await fetch(`${server.url}/v1/refuse`, {headers: {authorization: `Bearer ${apiKeyOf('only-models:list')}`}, method: 'POST'})
      expect(response.status).to.equal(403)
      expect((await response.json()).detail).to.contain('models:read')
    })

    it("are Anthropic's on an Anthropic route outside /anthropic, which takes x-api-key as under /anthropic", async () => {
      const anthropic = new Anthropic({apiKey: apiKeyOf('root'), baseURL: server.url, maxRetries: 0})
      const error = await anthropic.messages.create({max_tokens: 0, messages: [{content: 'Hi', role: 'user'}], model: 'tiny'}).catch((caught: unknown) => caught)
      expect(error).to.be.instanceOf(Anthropic.BadRequestError)
      expect((error as InstanceType<typeof Anthropic.BadRequestError>).error).to.deep.equal({error: {message: '`max_tokens` must be an integer >= 1 (got 0).', type: 'invalid_request_error'}, type: 'error'})
    })
  })

  describe('requests named with request_id', () => {
    let server: Listening
    const named = new NamedRequests()
    const call = (path: string, body: unknown) => fetch(`${server.url}${path}`, {body: JSON.stringify(body), headers: {'content-type': 'application/json'}, method: 'POST'})
    before(async () => {
      server = await serve([slowRoute, ...xinferenceRoutes({namedRequests: named, supervisor: undefined as never})], {namedRequests: named})
    })
    after(() => server.close())

    it('are stopped by their abort, report their progress, and their id is refused while blocked', async () => {
      const running = call('/v1/slow', {model: 'tiny', request_id: 'r1'})
      while (named.progress('r1') === undefined) await new Promise((resolve) => setImmediate(resolve))
      expect(await (await fetch(`${server.url}/v1/requests/r1/progress`)).json()).to.deep.equal({progress: 0})
      const abort = await call('/v1/models/tiny/requests/r1/abort', {block_duration: 30})
      expect(await abort.json()).to.deep.equal({msg: 'DONE'})
      const stopped = await running
      expect(stopped.status).to.equal(499)
      expect((await stopped.json()).detail).to.contain('was aborted')
      expect(await (await fetch(`${server.url}/v1/requests/r1/progress`)).json()).to.deep.equal({progress: 1})
      const again = await call('/v1/slow', {model: 'tiny', request_id: 'r1'})
      expect(again.status).to.equal(409)
      expect((await again.json()).error.param).to.equal('request_id')
    })

    it('answer NOT_FOUND for an id not running, and 404 naming an id never seen', async () => {
      expect(await (await call('/v1/models/tiny/requests/never/abort', {block_duration: 0})).json()).to.deep.equal({msg: 'NOT_FOUND'})
      const progress = await fetch(`${server.url}/v1/requests/never/progress`)
      expect(progress.status).to.equal(404)
      expect((await progress.json()).detail).to.contain('"never"')
    })
  })

  it('remember a bounded number of finished requests and blocked ids, forgetting the oldest', () => {
    const named = new NamedRequests({blocked: 2, finished: 2})
    for (const id of ['a', 'b', 'c']) named.enter(id, 'tiny', () => {})()
    expect(['a', 'b', 'c'].map((id) => named.progress(id))).to.deep.equal([undefined, 1, 1])
    for (const id of ['x', 'y', 'z']) named.abort('tiny', id, 60)
    expect(() => named.enter('x', 'tiny', () => {})).not.to.throw()
    expect(() => named.enter('z', 'tiny', () => {})).to.throw('blocked')
  })

  describe('launch fields', () => {
    it("take Xinference's fields at the values that ask for nothing, as its clients send them", () => {
      const sent = {enable_virtual_env: null, envs: null, model_name: 'm', model_path: null, n_gpu: 'auto', n_worker: 1, peft_model_config: null, replica: 1, replica_config: null, request_limits: null, virtual_env_packages: null, wait_ready: 'False'}
      expect(launchSchema.parse(sent)).to.include({model_name: 'm', n_worker: 1, wait_ready: false})
      expect(launchSchema.parse({envs: {}, model_name: 'm', peft_model_config: {lora_list: []}, virtual_env_packages: []})).to.include({model_name: 'm'})
    })

    it('refuse the others naming the field and saying what to do, never as unknown engine parameters', () => {
      const cases: Array<[Record<string, unknown>, RegExp]> = [
        [{n_worker: 2}, /`n_worker` can only be 1.*replica/],
        [{model_path: '/models/x'}, /`model_path` is not taken at launch: register the model with `model_uri`/],
        [{virtual_env_packages: ['torch']}, /`virtual_env_packages` is not taken at launch.*virtualenv\.packages/],
        [{envs: {HF_TOKEN: 'x'}}, /`envs` is not supported/],
        [{enable_virtual_env: false}, /`enable_virtual_env` cannot be false/],
        [{peft_model_config: {lora_list: [{lora_name: 'a', local_path: '/a'}]}}, /`peft_model_config` is not supported/],
        [{request_limits: 4}, /`request_limits` is not supported/],
      ]
      for (const [fields, message] of cases) {
        const error = refusal(() => launchSchema.parse({model_name: 'm', ...fields}))
        expect(error.status, JSON.stringify(fields)).to.equal(400)
        expect(error.message).to.match(message)
        expect(error.param).to.equal(Object.keys(fields)[0])
      }
    })
  })

  describe('text booleans and kwargs text', () => {
    it('read "true", "False", "1" and "0" where a field takes them, and nothing else', () => {
      const flag = s.boolean({fromText: true})
      expect(['true', 'False', '1', '0', true].map((value) => flag.parse(value))).to.deep.equal([true, false, true, false, true])
      expect(refusal(() => flag.parse('yes', 'return_documents')).message).to.contain('`return_documents` must be true or false')
      expect(refusal(() => s.boolean().parse('true', 'stream')).message).to.contain('`stream` must be true or false')
      expect(() => checkQuery({wait_ready: {schema: {type: 'boolean'}}}, {wait_ready: 'False'})).not.to.throw()
      expect(() => checkQuery({wait_ready: {schema: {type: 'boolean'}}}, {wait_ready: 'no'})).to.throw('must be true or false')
    })

    it('read kwargs as JSON text or as the object, and name a key the route does not take', () => {
      const kwargs = s.jsonText(s.object({}))
      expect(kwargs.parse('{}', 'kwargs')).to.deep.equal({})
      expect(kwargs.parse({}, 'kwargs')).to.deep.equal({})
      expect(refusal(() => kwargs.parse('{"temperature": 1}', 'kwargs')).message).to.equal('`kwargs.temperature` is not taken: `kwargs` takes no fields.')
      expect(refusal(() => kwargs.parse('{oops', 'kwargs')).message).to.contain('`kwargs` must be JSON text')
    })
  })
})
