/**
 * Logins against a real `service-local --auth-config`: logging out, an administrator revoking a user's tokens
 * (kept across a restart), `servicectl logout`, and the login throttle under a burst of wrong passwords.
 */
import {expect} from 'chai'
import {createHash} from 'node:crypto'
import {readFile, stat} from 'node:fs/promises'
import {join} from 'node:path'

import {apiKeyOf, passwordOf, writeTestAuthConfig} from '../helpers/auth.js'
import {callApi, type RunningService, servicectl, startService, temporaryDirectory} from '../helpers/service.js'

describe('logins: logout, revocation and throttling (service-local --auth-config)', function () {
  let service: RunningService
  let home: string
  let args: string[]
  const bearer = (credential: string) => ({authorization: `Bearer ${credential}`})
  const login = async (username: string, password = passwordOf(username)) => callApi(service, 'POST', '/token', {password, username})
  const tokenOf = async (username: string) => {
    const {body, status} = await login(username)
    expect(status, JSON.stringify(body)).to.equal(200)
    return body.access_token as string
  }

  const models = (token: string) => callApi(service, 'GET', '/v1/models', undefined, bearer(token))

  before(async () => {
    home = await temporaryDirectory()
    args = ['--auth-config', await writeTestAuthConfig(await temporaryDirectory())]
    service = await startService({args, home})
  })

  after(async () => service?.stop())

  it('logs out the token presented, which is then refused, and leaves other tokens of the user working', async () => {
    const [token, other] = [await tokenOf('only-models:list'), await tokenOf('only-models:list')]
    expect((await models(token)).status).to.equal(200)
    expect(await callApi(service, 'POST', '/v1/auth/logout', undefined, bearer(token))).to.deep.equal({body: {revoked: true, username: 'only-models:list'}, status: 200})
    const refused = await models(token)
    expect(refused.status).to.equal(401)
    expect(refused.body.error).to.include({code: 'token_revoked'})
    expect((await callApi(service, 'POST', '/v1/auth/logout', undefined, bearer(token))).body.error).to.include({code: 'token_revoked'})
    expect((await models(other)).status).to.equal(200)
    expect((await callApi(service, 'POST', '/v1/auth/logout')).status, 'no token').to.equal(401)
    expect((await callApi(service, 'POST', '/v1/auth/logout', undefined, bearer(apiKeyOf('root')))).status, 'an API key').to.equal(400)
  })

  it("lets only an administrator revoke a user's tokens, keeps them revoked across a restart, and accepts the user's next login", async () => {
    const token = await tokenOf('only-models:list')
    const revoke = (credential: string, username = 'only-models:list') => callApi(service, 'POST', `/v1/auth/users/${encodeURIComponent(username)}/revoke`, undefined, bearer(credential))
    expect((await revoke(token)).status, 'the user itself').to.equal(403)
    const revoked = await revoke(apiKeyOf('root'))
    expect(revoked.status).to.equal(200)
    expect(revoked.body).to.have.keys('tokens_valid_from', 'username')
    expect((await models(token)).body.error).to.include({code: 'token_revoked'})
    expect((await revoke(apiKeyOf('root'), 'ghost')).body.error).to.include({code: 'not_found', param: 'username'})

    const fresh = await tokenOf('only-models:list')
    expect((await models(fresh)).status, 'a login after the revocation').to.equal(200)
    expect((await models(apiKeyOf('only-models:list'))).status, 'API keys stay valid').to.equal(200)

    const file = join(home, 'revoked-tokens.json')
    expect((await stat(file)).mode & 0o777).to.equal(0o600)
    expect(service.output()).to.contain('every access token of user "only-models:list" issued until')
    await service.stop()
    service = await startService({args, home})
    expect((await models(token)).body.error, 'after a restart').to.include({code: 'token_revoked'})
    expect((await models(fresh)).status).to.equal(200)
  })

  it('logs out with servicectl: the service revokes the saved token and the saved login is deleted', async () => {
    const cliHome = await temporaryDirectory('servicectl-home-')
    const cli = (command: string[]) => servicectl([...command, '-e', service.url], {env: {SERVICE_HOME: cliHome}})
    expect((await cli(['login', '--username', 'only-models:list', '--password', passwordOf('only-models:list')])).exitCode).to.equal(0)
    const file = join(cliHome, 'auth', createHash('sha256').update(service.url).digest('hex'))
    const {access_token: token} = JSON.parse(await readFile(file, 'utf8'))
    const out = await cli(['logout'])
    expect(out.exitCode, out.stderr).to.equal(0)
    expect(out.stdout).to.equal(`Logged out of ${service.url} as only-models:list: the service revoked the token and the saved login is deleted.`)
    expect((await models(token)).body.error).to.include({code: 'token_revoked'})
    expect(await stat(file).catch((error) => error.code)).to.equal('ENOENT')
    expect((await cli(['logout'])).stdout).to.equal(`Not logged in to ${service.url}; nothing to do.`)
    expect((await cli(['list'])).stderr).to.contain('has access control on; log in with')
  })

  it('refuses a username with 429 and Retry-After after 5 wrong passwords, also the right one, under a burst of 300 over 16 connections', async () => {
    const wrong = Array.from({length: 300}, (_, i) => i)
    const statuses: number[] = []
    // 16 at a time, as 16 connections would send them.
    for (let start = 0; start < wrong.length; start += 16)
      statuses.push(...(await Promise.all(wrong.slice(start, start + 16).map(async (i) => (await login('root', `guess ${i}`)).status))))
    expect(statuses.filter((status) => status === 401)).to.have.length(5)
    expect(statuses.filter((status) => status === 429)).to.have.length(295)

    const response = await fetch(`${service.url}/token`, {body: JSON.stringify({password: passwordOf('root'), username: 'root'}), headers: {'content-type': 'application/json'}, method: 'POST'})
    expect(response.status, 'the right password').to.equal(429)
    const retryAfter = Number(response.headers.get('retry-after'))
    expect(retryAfter).to.be.within(1, 60)
    const {error} = await response.json()
    expect(error).to.include({code: 'login_throttled', type: 'rate_limit_error'})
    expect(error.message).to.match(/^too many failed logins: 5 failed logins for this username within 60 s; try again in \d+ s \(at \d{4}-.*Z\)\. Every login is refused until then, even with the right password\.$/)
    expect((await models(apiKeyOf('root'))).status, 'API keys are not throttled').to.equal(200)
    expect(service.output()).to.match(/login refused for a configured user \(username fingerprint [0-9a-f]{8}\) from \S+ \(too many failed logins: not checked\)/)
  })

  it('refuses every login from an address after 20 wrong passwords, whatever the usernames', async () => {
    // Some of this address's 20 were spent on root above, so the refusal comes within 20 more.
    let attempts = 0
    let answer
    do answer = await login(`guesser-${attempts++}`, 'wrong')
    while (answer.status === 401 && attempts <= 20)
    expect(answer.status).to.equal(429)
    expect(answer.body.error.message).to.match(/^too many failed logins: 20 failed logins from your address within 60 s/)
    expect((await login('nobody')).status, 'the right password of another user').to.equal(429)
  })
})
