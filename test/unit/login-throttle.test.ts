import {expect} from 'chai'

import {AccessControl} from '../../src/auth/access-control.js'
import {parseAuthConfig} from '../../src/auth/config.js'
import {addressKey, LoginThrottle} from '../../src/auth/login-throttle.js'
import {ServiceError} from '../../src/kernel/errors.js'
import {passwordOf, testAuthConfig} from '../helpers/auth.js'

const START = Date.parse('2030-01-01T00:00:00Z')
const LIMITS = {maxTracked: 100, perAddress: 20, perUsername: 5, windowMs: 60_000}

describe('login throttle', () => {
  let clock: number
  let throttle: LoginThrottle
  const refusal = (username: string, address: string) => {
    try {
      throttle.check(username, address)
    } catch (error) {
      return error as ServiceError
    }

    return undefined
  }

  beforeEach(() => {
    clock = START
    throttle = new LoginThrottle(LIMITS, () => clock)
  })

  it('refuses a username after 5 failures within a minute, says when to retry, and lets it in once the oldest failure is a minute old', () => {
    for (let i = 0; i < 5; i++) {
      expect(refusal('root', '192.0.2.1'), `attempt ${i + 1}`).to.equal(undefined)
      throttle.failed('root', '192.0.2.1')
      clock += 1000
    }

    // From another address too: the username is what is being guessed.
    const refused = refusal('root', '192.0.2.2')!
    expect(refused).to.include({code: 'login_throttled', retryAfterSeconds: 55, status: 429})
    expect(refused.message).to.equal(
      'too many failed logins: 5 failed logins for this username within 60 s; try again in 55 s (at 2030-01-01T00:01:00.000Z). Every login is refused until then, even with the right password.',
    )
    expect(refusal('nobody', '192.0.2.2'), 'another username from another address').to.equal(undefined)
    clock = START + 60_000
    expect(refusal('root', '192.0.2.2')).to.equal(undefined)
  })

  it('refuses an address after 20 failures whatever the usernames, and a success does not give the address its budget back', () => {
    for (let i = 0; i < 20; i++) throttle.failed(`user${i}`, '192.0.2.1')
    throttle.succeeded('root')
    expect(refusal('root', '192.0.2.1')).to.include({code: 'login_throttled', retryAfterSeconds: 60})
    expect(refusal('root', '::ffff:192.0.2.1'), 'the same address, IPv4-mapped').to.include({code: 'login_throttled'})
    expect(refusal('root', '192.0.2.9')).to.equal(undefined)
  })

  it("clears a username's failures when it logs in", () => {
    for (let i = 0; i < 4; i++) throttle.failed('root', '192.0.2.1')
    throttle.succeeded('root')
    for (let i = 0; i < 4; i++) throttle.failed('root', '192.0.2.1')
    expect(refusal('root', '192.0.2.1')).to.equal(undefined)
  })

  it('counts an IPv6 address by its /64 network', () => {
    expect(addressKey('2001:db8:1:2:aaaa::1')).to.equal('2001:db8:1:2::/64')
    expect(addressKey('2001:0db8:0001:0002:ffff:1:2:3')).to.equal('2001:db8:1:2::/64')
    expect(addressKey('::1')).to.equal('0:0:0:0::/64')
    for (let i = 0; i < 20; i++) throttle.failed(`user${i}`, `2001:db8:1:2::${i.toString(16)}`)
    expect(refusal('root', '2001:db8:1:2::ffff')).to.include({code: 'login_throttled'})
    expect(refusal('root', '2001:db8:1:3::1')).to.equal(undefined)
  })

  it('remembers at most maxTracked usernames and addresses, forgetting those that failed longest ago', () => {
    for (let i = 0; i < 1000; i++) {
      throttle.failed(`user${i}`, `198.51.100.${i % 250}`)
      clock += 1
    }

    expect(throttle.tracked).to.equal(LIMITS.maxTracked)
  })

  it('refuses the right password while the username is throttled, through AccessControl', async () => {
    const access = new AccessControl(parseAuthConfig(testAuthConfig(), 'auth.json'), {loginLimits: LIMITS, now: () => clock})
    const login = (password: string) => access.login('root', password, '192.0.2.1').then(
      () => 200,
      (error: ServiceError) => error.status,
    )
    const statuses = []
    for (let i = 0; i < 7; i++) statuses.push(await login('wrong'))
    expect(statuses).to.deep.equal([401, 401, 401, 401, 401, 429, 429])
    expect(await login(passwordOf('root'))).to.equal(429)
    clock += 60_000
    expect(await login(passwordOf('root'))).to.equal(200)
  })
})
