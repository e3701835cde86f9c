import {expect} from 'chai'
import {writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import {loadAuthConfig, parseAuthConfig} from '../../src/auth/config.js'
import {temporaryDirectory} from '../helpers/service.js'

const SECRET = 'b1946ac92492d2347c6235b4d2611184e2a4f8d3c1f0e5a6b7c8d9e0f1a2b3c4'
const valid = () => ({
  auth_config: {algorithm: 'HS256', secret_key: SECRET, token_expire_in_minutes: 30},
  user_config: [
    {api_keys: ['sk-72tkvudyGLPMi', 'sk-ZOTLIY4gt9w11'], password: 'secret1', permissions: ['admin'], username: 'user1'},
    {api_keys: ['sk-35tkasdyGLYMy'], password: 'secret2', permissions: ['models:list', 'models:read'], username: 'user2'},
  ],
})

/** The problem lines of the error a config is refused with. */
function problemsOf(config: unknown): string[] {
  try {
    parseAuthConfig(config, '/etc/auth.json')
  } catch (error) {
    expect(error).to.include({code: 'invalid_auth_config'})
    const [first, ...rest] = (error as Error).message.split('\n')
    expect(first).to.match(/^the access-control config \/etc\/auth.json has (a problem|\d+ problems); the service did not start:$/)
    return rest.map((line) => line.replace(/^ {2}- /, ''))
  }

  throw new Error('the config was accepted')
}

describe('access-control config', () => {
  it("accepts Xinference's format, defaulting the algorithm to HS256 and api_keys to none", () => {
    const config = valid()
    delete (config.auth_config as Partial<typeof config.auth_config>).algorithm
    delete (config.user_config[1] as Partial<(typeof config.user_config)[1]>).api_keys
    expect(parseAuthConfig(config, '/etc/auth.json')).to.deep.equal({
      algorithm: 'HS256',
      file: '/etc/auth.json',
      secretKey: SECRET,
      tokenExpireInMinutes: 30,
      users: [
        {apiKeys: [{key: 'sk-72tkvudyGLPMi', name: 'user1-key1'}, {key: 'sk-ZOTLIY4gt9w11', name: 'user1-key2'}], password: 'secret1', permissions: ['admin'], username: 'user1'},
        {apiKeys: [], password: 'secret2', permissions: ['models:list', 'models:read'], username: 'user2'},
      ],
    })
  })

  it('reports every problem at once, one line each, naming where it is', () => {
    const config = {
      auth_config: {algorithm: 'RS256', secret_key: 'short', token_expire_in_minute: 30},
      extra: true,
      user_config: [
        {api_keys: ['sk-tooshort', 'sk-72tkvudyGLPMi'], password: 'a', permissions: ['models:write', 'admin'], username: 'alice'},
        {api_keys: ['sk-72tkvudyGLPMi'], permissions: ['admin'], username: 'alice'},
        {password: 'b', username: ''},
        'bob',
      ],
    }
    expect(problemsOf(config)).to.deep.equal([
      'extra is not a known field; known fields: auth_config, user_config',
      'auth_config.token_expire_in_minute is not a known field of auth_config; known fields: algorithm, secret_key, token_expire_in_minutes',
      'auth_config.algorithm "RS256" is not supported; use HS256, HS384 or HS512 (tokens are signed with secret_key)',
      'auth_config.secret_key is too weak: HS256 needs at least 32 bytes and it has 5; generate one with `openssl rand -hex 32`',
      'auth_config.token_expire_in_minutes is missing; it is how long a login lasts, e.g. 30',
      'user_config[0].permissions[0] "models:write" is not a permission; use one of models:list, models:read, models:register, models:unregister, models:start, models:stop, metrics:read, admin',
      'user_config[0].api_keys[0] is not a valid API key: it must be "sk-" followed by exactly 13 letters or digits',
      'user_config[1].username "alice" is already used by user_config[0]; usernames must be unique',
      'user_config[1].password is missing',
      'user_config[1].api_keys[0] is the same API key as user_config[0].api_keys[1]; every API key must be unique',
      'user_config[2].username is missing',
      'user_config[2].permissions is missing; list what the user may do, from models:list, models:read, models:register, models:unregister, models:start, models:stop, metrics:read, admin',
      'user_config[3] must be an object with username, password, permissions and api_keys',
    ])
  })

  it('takes keys with a name, a model scope and quotas, and model scopes and quotas per user', () => {
    const config = valid()
    const user = {
      ...config.user_config[1],
      api_keys: ['sk-35tkasdyGLYMy', {key: 'sk-ZOTLIY4gt9w12', models: ['qwen*', 'tiny-?'], name: 'ci@build', quotas: {requests_per_minute: 10, tokens_per_day: 100_000}}],
      models: ['tiny'],
      quotas: {requests_per_day: 1000},
    }
    expect(parseAuthConfig({...config, user_config: [config.user_config[0], user]}, 'f').users[1]).to.deep.equal({
      apiKeys: [
        {key: 'sk-35tkasdyGLYMy', name: 'user2-key1'},
        {key: 'sk-ZOTLIY4gt9w12', models: ['qwen*', 'tiny-?'], name: 'ci@build', quotas: {requests_per_minute: 10, tokens_per_day: 100_000}},
      ],
      models: ['tiny'],
      password: 'secret2',
      permissions: ['models:list', 'models:read'],
      quotas: {requests_per_day: 1000},
      username: 'user2',
    })
  })

  it('bounds and checks the names, scopes and quotas, naming the field', () => {
    const config = valid()
    const tooMany = Array.from({length: 101}, (_, i) => `m${i}`)
    const user = {
      ...config.user_config[1],
      api_keys: [
        {key: 'sk-ZOTLIY4gt9w12', models: [], name: 'user1-key1', quotas: {requests_per_hour: 5, tokens_per_minute: 0}},
        {key: 'sk-ZOTLIY4gt9w13', models: ['ok', 'a/b', 42], name: ' spaced', secret: true},
        {name: 'no-key'},
        7,
      ],
      models: tooMany,
      quotas: {requests_per_day: 1e10, tokens_per_day: 2.5},
    }
    expect(problemsOf({...config, user_config: [config.user_config[0], user]})).to.deep.equal([
      'user_config[1].api_keys[0].models must be a list of 1 to 100 model uids or patterns (`qwen*`); leave it out for every model',
      'user_config[1].api_keys[0].quotas.requests_per_hour is not a known quota; known quotas: requests_per_minute, requests_per_day, tokens_per_minute, tokens_per_day',
      'user_config[1].api_keys[0].quotas.tokens_per_minute must be a whole number from 1 to 1000000000 (it is 0); leave it out for no limit',
      'user_config[1].api_keys[0] is named "user1-key1", as user_config[0].api_keys[0] is; give it a unique `name` (usage and quotas are kept by name)',
      'user_config[1].api_keys[1].secret is not a known field of user_config[1].api_keys[1]; known fields: key, name, models, quotas',
      'user_config[1].api_keys[1].name must be 1 to 64 letters, digits and . _ - : @, starting with a letter or digit',
      'user_config[1].api_keys[1].models[1] must be a model uid, or a pattern of one with * and ?, of 1 to 200 letters, digits and . _ - :',
      'user_config[1].api_keys[1].models[2] must be a model uid, or a pattern of one with * and ?, of 1 to 200 letters, digits and . _ - :',
      'user_config[1].api_keys[2].key is not a valid API key: it must be "sk-" followed by exactly 13 letters or digits',
      'user_config[1].api_keys[3] must be an API key, or an object with key and optionally name, models and quotas',
      'user_config[1].models must be a list of 1 to 100 model uids or patterns (`qwen*`); leave it out for every model',
      'user_config[1].quotas.requests_per_day must be a whole number from 1 to 1000000000 (it is 10000000000); leave it out for no limit',
      'user_config[1].quotas.tokens_per_day must be a whole number from 1 to 1000000000 (it is 2.5); leave it out for no limit',
    ])
  })

  it('refuses a missing, short, repetitive or published secret, for the algorithm in use', () => {
    const withSecret = (secret_key: unknown, algorithm = 'HS256') => ({...valid(), auth_config: {algorithm, secret_key, token_expire_in_minutes: 30}})
    expect(problemsOf(withSecret(undefined))).to.deep.equal(['auth_config.secret_key is missing; generate one with `openssl rand -hex 32`'])
    expect(problemsOf(withSecret(''))).to.deep.equal(['auth_config.secret_key is missing; generate one with `openssl rand -hex 32`'])
    expect(problemsOf(withSecret(42))).to.deep.equal(['auth_config.secret_key must be a string; generate one with `openssl rand -hex 32`'])
    expect(problemsOf(withSecret('a'.repeat(64)))).to.deep.equal(['auth_config.secret_key is too weak: it uses only 1 different characters; generate one with `openssl rand -hex 32`'])
    expect(problemsOf(withSecret(SECRET.slice(0, 40), 'HS512'))).to.deep.equal([
      'auth_config.secret_key is too weak: HS512 needs at least 64 bytes and it has 40; generate one with `openssl rand -hex 32`',
    ])
    expect(problemsOf(withSecret('09d25e094faa6ca2556c818166b7a9563b93f7099f6f0f4caa6cf63b88e8d3e7'))).to.deep.equal([
      'auth_config.secret_key is too weak: it is the example key from published documentation, so anyone can sign tokens with it; generate one with `openssl rand -hex 32`',
    ])
    expect(parseAuthConfig(withSecret(SECRET, 'HS512'), 'f').algorithm).to.equal('HS512')
  })

  it('refuses a file with no users, or with the sections missing or of the wrong type', () => {
    expect(problemsOf({})).to.deep.equal([
      'auth_config is missing; it holds algorithm, secret_key and token_expire_in_minutes',
      'user_config is missing; it lists the users, each with username, password, permissions and api_keys',
    ])
    expect(problemsOf({auth_config: [], user_config: []})).to.deep.equal([
      'auth_config must be an object with algorithm, secret_key and token_expire_in_minutes',
      'user_config must be a non-empty array of users, each with username, password, permissions and api_keys',
    ])
    expect(problemsOf([])).to.deep.equal(['it must be a JSON object with the fields auth_config and user_config'])
    const zero = {...valid(), auth_config: {secret_key: SECRET, token_expire_in_minutes: 0}}
    expect(problemsOf(zero)).to.deep.equal(['auth_config.token_expire_in_minutes must be a whole number of minutes, at least 1 (it is 0)'])
  })

  it('never repeats a secret, password or API key in its messages', async () => {
    const directory = await temporaryDirectory()
    const file = join(directory, 'auth.json')
    await writeFile(file, '{"auth_config": {"secret_key": "s3cr3t-s3cr3t"}, "user_config": [{"username": "u", "password": hunter2}]}')
    const error = await loadAuthConfig(file).catch((error_) => error_)
    expect(error.message).to.match(/has a problem; the service did not start:\n {2}- it is not valid JSON: an unexpected character \(strings need double quotes; true, false and null are lower case\) at line 1 column 96$/)
    expect(error.message).not.to.contain('hunter2')

    const leaky = {...valid(), auth_config: {secret_key: 'password1', token_expire_in_minutes: 30}}
    leaky.user_config[0].api_keys = ['sk-hunter2hunter2hunter2', 'sk-72tkvudyGLPMi']
    leaky.user_config[1].api_keys = ['sk-72tkvudyGLPMi']
    const message = problemsOf(leaky).join('\n')
    for (const secret of ['password1', 'hunter2', 'sk-72tkvudyGLPMi', 'secret1']) expect(message).not.to.contain(secret)

    expect((await loadAuthConfig(join(directory, 'missing.json')).catch((error_) => error_)).message).to.equal(
      `the access-control config ${join(directory, 'missing.json')} has a problem; the service did not start:\n  - cannot read it (ENOENT)`,
    )
  })
})
