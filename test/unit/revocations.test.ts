import {expect} from 'chai'
import {decodeJwt} from 'jose'
import {mkdir, readFile, stat, writeFile} from 'node:fs/promises'
import {dirname, join} from 'node:path'

import {AccessControl} from '../../src/auth/access-control.js'
import {parseAuthConfig} from '../../src/auth/config.js'
import {Revocations} from '../../src/auth/revocations.js'
import {apiKeyOf, passwordOf, testAuthConfig} from '../helpers/auth.js'
import {temporaryDirectory} from '../helpers/service.js'

const START = Date.parse('2030-01-01T00:00:00.400Z')
const ADDRESS = '192.0.2.1'
const LIFETIME = 30 * 60

describe('token revocation', () => {
  let clock: number
  let file: string
  const refused = (promise: Promise<unknown>) => promise.then(() => expect.fail('was accepted'), (error) => error)
  const accessControl = async () =>
    new AccessControl(parseAuthConfig(testAuthConfig(), 'auth.json'), {now: () => clock, revocations: await Revocations.open({file, lifetimeSeconds: LIFETIME, now: () => clock})})
  const tokenOf = async (access: AccessControl, username: string) => (await access.login(username, passwordOf(username), ADDRESS)).access_token

  beforeEach(async () => {
    clock = START
    file = join(await temporaryDirectory(), 'home', 'revoked-tokens.json')
  })

  it('logs out one token, which a restarted service still refuses, and leaves the same user’s other tokens working', async () => {
    const access = await accessControl()
    const [first, second] = [await tokenOf(access, 'root'), await tokenOf(access, 'root')]
    expect(await access.logout(first)).to.deep.equal({username: 'root'})
    const restarted = await accessControl()
    expect(await refused(restarted.authenticate(first))).to.include({code: 'token_revoked', status: 401})
    expect((await restarted.authenticate(second)).username).to.equal('root')
    expect((await stat(file)).mode & 0o777).to.equal(0o600)
    expect((await stat(join(file, '..'))).mode & 0o777).to.equal(0o700)
  })

  it('refuses to log out an API key or a token it did not issue', async () => {
    const access = await accessControl()
    expect(await refused(access.logout(apiKeyOf('root')))).to.include({status: 400})
    expect(await refused(access.logout('not-a-token'))).to.include({code: 'invalid_credentials', status: 401})
  })

  it("revokes every token of a user issued until now, even earlier in the same second, and accepts the user's next login", async () => {
    const access = await accessControl()
    const before = await tokenOf(access, 'only-models:list')
    const other = await tokenOf(access, 'nobody')
    clock += 300
    expect((await access.revokeUser('only-models:list')).toISOString()).to.equal('2030-01-01T00:00:01.000Z')
    expect(await refused(access.authenticate(before))).to.include({code: 'token_revoked'})
    expect((await access.authenticate(other)).username).to.equal('nobody')
    expect((await access.authenticate(apiKeyOf('only-models:list'))).username, 'API keys are not tokens').to.equal('only-models:list')
    // Still within the second of the revocation: the new token is dated from the second after it.
    const after = await tokenOf(access, 'only-models:list')
    expect(decodeJwt(after).iat).to.equal(Date.parse('2030-01-01T00:00:01Z') / 1000)
    expect((await (await accessControl()).authenticate(after)).username).to.equal('only-models:list')
    expect(await refused(access.revokeUser('ghost'))).to.include({param: 'username', status: 404})
  })

  it('forgets revocations once the tokens they stand for have expired', async () => {
    const access = await accessControl()
    await access.logout(await tokenOf(access, 'root'))
    await access.revokeUser('nobody')
    clock += (LIFETIME + 2) * 1000
    await access.logout(await tokenOf(access, 'root'))
    const kept = JSON.parse(await readFile(file, 'utf8'))
    expect(Object.keys(kept.tokens)).to.have.length(1)
    expect(kept.users).to.deep.equal({})
  })

  it('revokes all of the user’s tokens until then once the list of single tokens is full', async () => {
    const revocations = await Revocations.open({file, lifetimeSeconds: LIFETIME, maxTokens: 1, now: () => clock})
    const access = new AccessControl(parseAuthConfig(testAuthConfig(), 'auth.json'), {now: () => clock, revocations})
    const [first, second, third] = [await tokenOf(access, 'root'), await tokenOf(access, 'root'), await tokenOf(access, 'root')]
    await access.logout(first)
    await access.logout(second)
    expect(await refused(access.authenticate(third)), 'issued in the same second as the one logged out').to.include({code: 'token_revoked'})
  })

  it('refuses every token issued before it started when the file cannot be read', async () => {
    const access = await accessControl()
    const token = await tokenOf(access, 'root')
    await mkdir(dirname(file), {recursive: true})
    await writeFile(file, '{"tokens": ')
    const restarted = await accessControl()
    expect(await refused(restarted.authenticate(token))).to.include({code: 'token_revoked'})
    expect((await restarted.authenticate(await tokenOf(restarted, 'root'))).username).to.equal('root')
    expect(JSON.parse(await readFile(file, 'utf8')).everyone.notBefore).to.equal(Math.ceil(START / 1000))
  })
})
