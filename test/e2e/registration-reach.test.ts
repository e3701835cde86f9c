/**
 * A real `service-local --auth-config`: a user with models:register and models:start (no admin) is refused every way
 * a registration or a launch could make the service run code of their choosing or tell whether a path exists, each
 * refusal naming the field, the permission and the operator's setting; an admin is let through; a user's
 * registrations are bounded by SERVICE_MAX_REGISTRATIONS_PER_USER. With access control off, the operator's
 * allow-lists bound everyone. Nothing is installed or launched: every refusal comes before that.
 */
import {expect} from 'chai'
import {readdir, readFile, writeFile} from 'node:fs/promises'
import {join} from 'node:path'
import {pathToFileURL} from 'node:url'

import {apiKeyOf, testAuthConfig, writeTestAuthConfig} from '../helpers/auth.js'
import {callApi, type RunningService, startService, temporaryDirectory} from '../helpers/service.js'

const REGISTRANT = 'registrant'
const QUOTA = 3

/** A chat model from the hub: names no path and brings no code. */
const hubModel = (name: string, extra: Record<string, unknown> = {}) => ({
  context_length: 2048,
  model_ability: ['chat'],
  model_lang: ['en'],
  model_name: name,
  model_specs: [{model_format: 'pytorch', model_id: 'org/model', model_size_in_billions: 1, quantization: 'none'}],
  version: 2,
  ...extra,
})

/** A flexible model run by the python launcher, as Xinference writes one. */
const flexibleModel = (name: string, uri: string, extra: Record<string, unknown> = {}) => ({launcher: 'python', launcher_args: {module: 'my_models'}, model_name: name, model_uri: uri, ...extra})

describe('what models:register and models:start can make the service run or read', function () {
  let service: RunningService
  let models: string
  let home: string
  const as = (username: string) => ({authorization: `Bearer ${apiKeyOf(username)}`})
  const register = (username: string, type: string, model: Record<string, unknown>) => callApi(service, 'POST', `/v1/model_registrations/${type}`, {model}, as(username))
  const launch = (username: string, request: Record<string, unknown>) => callApi(service, 'POST', '/v1/models', request, as(username))

  before(async () => {
    const directory = await temporaryDirectory()
    models = await temporaryDirectory()
    home = await temporaryDirectory()
    await writeFile(join(models, 'rows.csv'), 'a,b\n1,2\n')
    const config = testAuthConfig()
    config.user_config.push({api_keys: [apiKeyOf(REGISTRANT)], password: 'pw of registrant!', permissions: ['models:register', 'models:start', 'models:list', 'models:unregister'], username: REGISTRANT})
    service = await startService({args: ['--auth-config', await writeTestAuthConfig(directory, config)], env: {SERVICE_MAX_REGISTRATIONS_PER_USER: String(QUOTA)}, home})
    expect((await register('root', 'LLM', hubModel('hub-chat'))).status).to.equal(200)
  })

  after(async () => service?.stop())

  const expectRefused = (answer: {status: number; body: any}, field: string, setting?: string) => {
    expect(answer.status, JSON.stringify(answer.body)).to.equal(403)
    expect(answer.body.error).to.include({code: 'forbidden', param: field})
    expect(answer.body.error.message).to.contain(`${field} `).and.to.contain('which needs the admin permission').and.to.contain(`user "${REGISTRANT}" does not have it`)
    if (setting) expect(answer.body.error.message).to.contain(setting)
  }

  it('refuses a flexible launcher module of the registration: pydoc.pipepager, runpy, os.execl', async () => {
    const uri = pathToFileURL(join(models, 'rows.csv')).href
    for (const launcherArgs of [{function: 'pipepager', module: 'pydoc'}, {function: 'run_path', module: 'runpy'}, {function: 'execl', module: 'os'}]) {
      const answer = await register(REGISTRANT, 'flexible', flexibleModel(`planted-${launcherArgs.module}`, uri, {launcher_args: launcherArgs}))
      expectRefused(answer, 'launcher_args.module', 'SERVICE_ALLOWED_PYTHON_MODULES')
    }
  })

  it('refuses packages from URLs, files, folders and VCS, and package indexes, but keeps plain PyPI requirements', async () => {
    for (const requirement of ['evil @ http://127.0.0.1:1/evil.whl', 'file:///tmp/evil.whl', '/tmp/evil-folder', 'git+https://127.0.0.1:1/evil.git'])
      expectRefused(await register(REGISTRANT, 'LLM', hubModel('sourced', {virtualenv: {packages: ['six==1.17.0', requirement]}})), 'virtualenv.packages[1]', 'SERVICE_ALLOWED_PIP_SOURCES')
    for (const [setting, field] of [[{index_url: 'http://127.0.0.1:1/simple'}, 'virtualenv.index_url'], [{find_links: ['http://127.0.0.1:1/wheels']}, 'virtualenv.find_links[0]'], [{extra_index_url: 'http://127.0.0.1:1/simple'}, 'virtualenv.extra_index_url']] as const)
      expectRefused(await register(REGISTRANT, 'LLM', hubModel('indexed', {virtualenv: {packages: ['six'], ...setting}})), field, 'SERVICE_ALLOWED_PIP_SOURCES')
    const plain = await register(REGISTRANT, 'LLM', hubModel('plain-packages', {virtualenv: {packages: ['six==1.17.0', 'scikit-learn>=1.5,<2', 'transformers[torch]~=4.46']}}))
    expect(plain.status, JSON.stringify(plain.body)).to.equal(200)
    expect((await callApi(service, 'DELETE', '/v1/model_registrations/LLM/plain-packages', undefined, as(REGISTRANT))).status).to.equal(200)
  })

  it('answers a path that exists and one that does not the same, for every format that takes a file or folder', async () => {
    const specs = [
      ['LLM', (uri: string) => hubModel('probe', {model_specs: [{model_format: 'pytorch', model_size_in_billions: 1, model_uri: uri, quantization: 'none'}]})],
      ['LLM', (uri: string) => hubModel('probe', {model_specs: [{model_format: 'mlx', model_size_in_billions: 1, model_uri: uri, quantization: '4bit'}]})],
      ['LLM', (uri: string) => hubModel('probe', {model_specs: [{model_format: 'awq', model_size_in_billions: 1, model_uri: uri, quantization: 'Int4'}]})],
      ['flexible', (uri: string) => ({launcher: 'onnx', model_name: 'probe', model_uri: uri})],
    ] as const
    for (const [type, family] of specs) {
      const answers = await Promise.all(['file:///etc/shadow', 'file:///etc/no-such-file', 'file:///etc'].map((uri) => register(REGISTRANT, type, family(uri))))
      expectRefused(answers[0], 'model_specs[0].model_uri', 'SERVICE_ALLOWED_MODEL_DIRS')
      for (const answer of answers.slice(1)) expect(answer).to.deep.equal(answers[0])
    }
  })

  it('refuses launch parameters that run code or read files: trust_remote_code, template files, envs, packages, a model path', async () => {
    const refusals: Array<[Record<string, unknown>, string]> = [
      [{model_engine: 'transformers', trust_remote_code: true}, 'trust_remote_code'],
      [{model_engine: 'vllm', trust_remote_code: 'true'}, 'trust_remote_code'],
      [{chat_template: '/etc/shadow', model_engine: 'vllm'}, 'chat_template'],
      [{chat_template: '/etc/no-such-template.jinja', model_engine: 'sglang'}, 'chat_template'],
    ]
    for (const [parameters, field] of refusals) expectRefused(await launch(REGISTRANT, {model_name: 'hub-chat', ...parameters}), field)
    // Xinference's launch fields that would bring code or paths are refused at launch to everyone, pointing to a registration.
    const xinference: Array<[Record<string, unknown>, string]> = [
      [{envs: {LD_PRELOAD: '/tmp/evil.so'}, model_engine: 'transformers'}, 'envs'],
      [{enable_virtual_env: true, model_engine: 'transformers', virtual_env_packages: ['evil @ http://127.0.0.1:1/evil.whl']}, 'virtual_env_packages'],
      [{model_engine: 'transformers', model_path: '/etc'}, 'model_path'],
    ]
    for (const [parameters, field] of xinference) {
      const answer = await launch(REGISTRANT, {model_name: 'hub-chat', ...parameters})
      expect(answer.status, JSON.stringify(answer.body)).to.equal(400)
      expect(answer.body.error.param).to.equal(field)
    }
    // What asks for nothing passes the check: the answer is about the spec asked for, not about permissions.
    const harmless = await launch(REGISTRANT, {chat_template: '{{ messages }}', envs: null, model_engine: 'vllm', model_name: 'hub-chat', quantization: 'no-such', trust_remote_code: false})
    expect(harmless.status).to.equal(400)
    expect(harmless.body.error.param).to.equal('quantization')
  })

  it('lets an admin register code and paths, and launch with them', async () => {
    const uri = pathToFileURL(join(models, 'rows.csv')).href
    const planted = await register('root', 'flexible', flexibleModel('admin-flexible', uri, {launcher_args: {module: 'my_models', path: models}, virtualenv: {index_url: 'http://127.0.0.1:1/simple', packages: ['mine @ http://127.0.0.1:1/mine.whl']}}))
    expect(planted.status, JSON.stringify(planted.body)).to.equal(200)
    // Only a public function of the module is called, even for an admin.
    const dunder = await register('root', 'flexible', flexibleModel('admin-dunder', uri, {launcher_args: {function: '__builtins__', module: 'my_models'}}))
    expect(dunder.status).to.equal(400)
    expect(dunder.body.error.param).to.equal('launcher_args.function')
    // The check passes; the answer is about the spec asked for.
    const launched = await launch('root', {chat_template: '/etc/shadow', model_engine: 'vllm', model_name: 'hub-chat', quantization: 'no-such', trust_remote_code: true})
    expect(launched.status).to.equal(400)
    expect(launched.body.error.param).to.equal('quantization')
  })

  it(`bounds a user's registrations at SERVICE_MAX_REGISTRATIONS_PER_USER, even sent at once, but not an admin's`, async () => {
    for (let index = 0; index < QUOTA; index++) expect((await register(REGISTRANT, 'LLM', hubModel(`mine-${index}`))).status).to.equal(200)
    const over = await register(REGISTRANT, 'LLM', hubModel('one-too-many'))
    expect(over.status).to.equal(403)
    expect(over.body.error.code).to.equal('quota_exceeded')
    expect(over.body.error.message).to.equal(
      `user "${REGISTRANT}" already has ${QUOTA} registrations, the most a user without the admin permission may have (SERVICE_MAX_REGISTRATIONS_PER_USER=${QUOTA}); unregister some, or ask the operator to raise SERVICE_MAX_REGISTRATIONS_PER_USER (max_registrations_per_user in the config file).`,
    )
    const burst = await Promise.all([0, 1, 2, 3].map((index) => register(REGISTRANT, 'LLM', hubModel(`burst-${index}`))))
    expect(burst.map(({status}) => status)).to.deep.equal([403, 403, 403, 403])
    expect((await register('root', 'LLM', hubModel('admin-has-no-quota'))).status).to.equal(200)
    expect((await callApi(service, 'DELETE', '/v1/model_registrations/LLM/mine-0', undefined, as(REGISTRANT))).status).to.equal(200)
    expect((await register(REGISTRANT, 'LLM', hubModel('one-more'))).status).to.equal(200)
    // Whose each one is stays beside it, so that the count is the same after a restart.
    const files = await readdir(join(home, 'registrations', 'LLM'))
    expect(files.filter((file) => file.endsWith('.owner')).sort()).to.deep.equal(['mine-1.owner', 'mine-2.owner', 'one-more.owner'])
    expect(await readFile(join(home, 'registrations', 'LLM', 'one-more.owner'), 'utf8')).to.equal(REGISTRANT)
  })
})

describe('the operator allow-lists with access control off (service-local --allowed-…)', function () {
  let service: RunningService
  let models: string
  let home: string

  before(async () => {
    models = await temporaryDirectory()
    home = await temporaryDirectory()
    await writeFile(join(models, 'rows.csv'), 'a,b\n1,2\n')
    // As flags, which win over the environment.
    const flags = ['--allowed-model-dirs', models, '--allowed-pip-sources', 'http://127.0.0.1:1/simple', '--allowed-python-modules', 'my_models,other_models']
    service = await startService({args: flags, env: {SERVICE_ALLOWED_PYTHON_MODULES: 'pydoc'}, home})
  })

  after(async () => service?.stop())

  it('bounds every caller: listed modules and sources pass, others are refused naming the setting', async () => {
    const uri = pathToFileURL(join(models, 'rows.csv')).href
    const allowed = flexibleModel('allowed', uri, {launcher_args: {module: 'my_models.classifier', path: models}, virtualenv: {index_url: 'http://127.0.0.1:1/simple', packages: ['mine @ http://127.0.0.1:1/simple/mine.whl']}})
    expect((await callApi(service, 'POST', '/v1/model_registrations/flexible', {model: allowed})).status).to.equal(200)
    for (const [model, field, setting] of [
      [flexibleModel('module', uri, {launcher_args: {function: 'pipepager', module: 'pydoc'}}), 'launcher_args.module', 'SERVICE_ALLOWED_PYTHON_MODULES'],
      [flexibleModel('index', uri, {virtualenv: {index_url: 'http://127.0.0.1:2/simple'}}), 'virtualenv.index_url', 'SERVICE_ALLOWED_PIP_SOURCES'],
    ] as const) {
      const answer = await callApi(service, 'POST', '/v1/model_registrations/flexible', {model})
      expect(answer.status).to.equal(403)
      expect(answer.body.error.param).to.equal(field)
      expect(answer.body.error.message).to.contain(`${setting} does not allow it`).and.to.contain(setting === 'SERVICE_ALLOWED_PYTHON_MODULES' ? '(it allows my_models, other_models)' : '(it allows http://127.0.0.1:1/simple)')
    }

    // Outside the allowed folders, nothing is looked at: one answer whether the path exists or not.
    const outside = await Promise.all(['/etc/shadow', '/etc/no-such-file'].map((path) => callApi(service, 'POST', '/v1/model_registrations/flexible', {model: flexibleModel('outside', path)})))
    expect(outside[0].status).to.equal(400)
    expect(outside[0].body.error.message).to.contain('is outside the folders SERVICE_ALLOWED_MODEL_DIRS allows')
    expect(outside[1].body.error.message.replace('no-such-file', 'shadow')).to.equal(outside[0].body.error.message)
    expect(await readdir(join(home, 'registrations', 'flexible'))).to.deep.equal(['allowed.json'])
  })
})
