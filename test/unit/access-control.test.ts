import {expect} from 'chai'
import {decodeJwt, decodeProtectedHeader} from 'jose'

import {AccessControl} from '../../src/auth/access-control.js'
import {parseAuthConfig} from '../../src/auth/config.js'
import {apiKeyOf, AUTH_SECRET, mintToken, OTHER_SECRET, passwordOf, testAuthConfig, unsignedToken} from '../helpers/auth.js'

const START = Date.parse('2030-01-01T00:00:00Z')
/** A documentation address (RFC 5737) as the client's. */
const ADDRESS = '192.0.2.1'

describe('access control', () => {
  let clock: number
  let access: AccessControl
  const refused = (promise: Promise<unknown>) => promise.then(() => expect.fail('was accepted'), (error) => error)

  beforeEach(() => {
    clock = START
    access = new AccessControl(parseAuthConfig(testAuthConfig({algorithm: 'HS384', expireInMinutes: 30}), 'auth.json'), {now: () => clock})
  })

  it('logs a user in with a JWT of the configured algorithm, carrying the user, permissions and expiry', async () => {
    const token = await access.login('only-models:start', passwordOf('only-models:start'), ADDRESS)
    expect(token).to.include({expires_in: 1800, token_type: 'bearer'})
    expect(decodeProtectedHeader(token.access_token)).to.deep.equal({alg: 'HS384', typ: 'JWT'})
    const {jti, ...claims} = decodeJwt(token.access_token)
    expect(claims).to.deep.equal({exp: START / 1000 + 1800, iat: START / 1000, scopes: ['models:start'], sub: 'only-models:start'})
    expect(jti).to.match(/^[0-9a-f-]{36}$/)
    const caller = await access.authenticate(token.access_token)
    expect(caller).to.deep.include({username: 'only-models:start', via: 'token'})
    expect([...caller.permissions]).to.deep.equal(['models:start'])
  })

  it('refuses a wrong password and an unknown user with the same answer', async () => {
    for (const [username, password] of [['root', 'wrong'], ['ghost', passwordOf('root')], ['root', '']]) {
      const error = await refused(access.login(username, password, ADDRESS))
      expect(error).to.include({code: 'login_failed', message: 'incorrect username or password.', status: 401})
    }
  })

  it('describes a refused login by a keyed fingerprint of the username, never the username itself', () => {
    const typedPassword = passwordOf('root')
    const entry = access.refusedLoginEntry(typedPassword)
    expect(entry).to.match(/^login refused for an unknown username \(username fingerprint [0-9a-f]{8}\)$/)
    expect(entry).not.to.include(typedPassword)
    expect(access.refusedLoginEntry(typedPassword)).to.equal(entry)
    expect(access.refusedLoginEntry('root')).to.equal(`login refused for a configured user (username fingerprint ${access.usernameFingerprint('root')})`)
    const otherSecret = new AccessControl(parseAuthConfig({...testAuthConfig(), auth_config: {...testAuthConfig().auth_config, secret_key: OTHER_SECRET}}, 'auth.json'))
    expect(otherSecret.usernameFingerprint('root')).not.to.equal(access.usernameFingerprint('root'))
  })

  it('says a token expired once its time is up, by the injected clock', async () => {
    const {access_token} = await access.login('root', passwordOf('root'), ADDRESS)
    clock += 30 * 60 * 1000 - 1000
    expect((await access.authenticate(access_token)).username).to.equal('root')
    clock += 1000
    const error = await refused(access.authenticate(access_token))
    expect(error).to.include({code: 'token_expired', status: 401})
    expect(error.message).to.equal('the access token expired at 2030-01-01T00:30:00.000Z; log in again for a new one (POST /token, or `servicectl login`).')
  })

  it('refuses tokens it did not sign, unsigned ones, other algorithms, tampered ones and passwords', async () => {
    const {access_token} = await access.login('nobody', passwordOf('nobody'), ADDRESS)
    const [header, , signature] = access_token.split('.')
    const tampered = [header, Buffer.from(JSON.stringify({exp: START / 1000 + 60, scopes: ['admin'], sub: 'nobody'})).toString('base64url'), signature].join('.')
    const forged = [
      await mintToken({algorithm: 'HS384', now: START, secret: OTHER_SECRET, sub: 'root'}),
      await mintToken({algorithm: 'HS256', now: START, secret: AUTH_SECRET, sub: 'root'}),
      await mintToken({algorithm: 'HS384', expiresIn: -60, now: START, secret: OTHER_SECRET, sub: 'root'}),
      unsignedToken('root'),
      tampered,
      passwordOf('root'),
      'garbage',
    ]
    for (const credential of forged) {
      const error = await refused(access.authenticate(credential))
      expect(error, credential).to.include({code: 'invalid_credentials', status: 401})
      expect(error.message).to.match(/^the bearer credential is neither an API key nor an access token issued by this service/)
    }
  })

  it("refuses a token for a user the config no longer has, and uses the config's permissions rather than the token's", async () => {
    const gone = await mintToken({algorithm: 'HS384', now: START, sub: 'ghost'})
    expect(await refused(access.authenticate(gone))).to.include({
      code: 'invalid_credentials',
      message: 'the access token is for the user "ghost", who is no longer in the access-control config.',
    })
    const claimsAdmin = await mintToken({algorithm: 'HS384', now: START, sub: 'nobody'})
    expect([...(await access.authenticate(claimsAdmin)).permissions]).to.deep.equal([])
  })

  it("accepts each user's API keys with that user's permissions, and refuses unknown keys", async () => {
    const caller = await access.authenticate(apiKeyOf('only-models:list'))
    expect(caller).to.deep.include({username: 'only-models:list', via: 'api_key'})
    expect([...caller.permissions]).to.deep.equal(['models:list'])
    expect(await refused(access.authenticate('sk-0000000000000'))).to.include({code: 'invalid_credentials', message: 'the API key is not valid for this service.', status: 401})
  })

  it('lets admin do everything and others only what they were given, naming the missing permission', async () => {
    const root = await access.authenticate(apiKeyOf('root'))
    access.authorize(root, 'models:stop', 'DELETE /v1/models/:model_uid')
    const lister = await access.authenticate((await access.login('only-models:list', passwordOf('only-models:list'), ADDRESS)).access_token)
    access.authorize(lister, 'models:list', 'GET /v1/models')
    expect(() => access.authorize(lister, 'models:start', 'POST /v1/models')).to.throw(
      'user "only-models:list" does not have the permission models:start, which POST /v1/models needs; ask an administrator to add it to the user\'s permissions in the access-control config.',
    )
    const keyed = await access.authenticate(apiKeyOf('only-models:list'))
    expect(() => access.authorize(keyed, 'admin', 'GET /v1/x')).to.throw(/^the API key of user "only-models:list" does not have the permission admin/)
  })

  it('names no secret in its summary for the log', () => {
    expect(access.summary).to.equal('16 users, 16 API keys, HS384 tokens valid for 30 minutes (auth.json)')
  })
})
