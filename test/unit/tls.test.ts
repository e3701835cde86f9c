import {expect} from 'chai'
import {execa} from 'execa'
import {writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import {loadTlsIdentity, trustCertificateAuthority} from '../../src/cli/tls.js'
import {untrustedCertificateAdvice} from '../../src/kernel/certificates.js'
import {temporaryDirectory} from '../helpers/service.js'

describe('TLS settings', () => {
  let directory: string
  const certificate = async (name: string) => {
    const [cert, key] = [join(directory, `${name}.pem`), join(directory, `${name}-key.pem`)]
    await execa('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', key, '-out', cert, '-days', '1', '-subj', `/CN=${name}`])
    return {cert, key}
  }

  const refusal = (promise: Promise<unknown>) => promise.then(() => expect.fail('was accepted'), (error: Error) => error.message)

  before(async () => {
    directory = await temporaryDirectory()
  })

  it('loads a certificate and its key, and refuses a key of another certificate or a file that is not there, naming the flags', async () => {
    const [one, other] = [await certificate('one'), await certificate('other')]
    expect((await loadTlsIdentity({'tls-cert': one.cert, 'tls-key': one.key}))?.cert.toString()).to.contain('BEGIN CERTIFICATE')
    expect(await loadTlsIdentity({})).to.equal(undefined)
    expect(await refusal(loadTlsIdentity({'tls-cert': one.cert, 'tls-key': other.key}))).to.match(/^--tls-cert .* and --tls-key .* cannot serve HTTPS: .*; give a PEM certificate and the private key it was made with\.$/)
    expect(await refusal(loadTlsIdentity({'tls-cert': join(directory, 'missing.pem'), 'tls-key': one.key}))).to.equal(`--tls-cert ${join(directory, 'missing.pem')} cannot be read (ENOENT).`)
  })

  it('refuses a --tls-ca file that holds no certificate', async () => {
    const file = join(directory, 'not-a-ca.pem')
    await writeFile(file, 'hello\n')
    expect(await refusal(trustCertificateAuthority(file))).to.equal(`--tls-ca ${file} holds no PEM certificate (-----BEGIN CERTIFICATE-----).`)
  })

  it('says what to do about a certificate the connection refused, and nothing about other failures', () => {
    expect(untrustedCertificateAdvice(Object.assign(new TypeError('fetch failed'), {cause: {code: 'SELF_SIGNED_CERT_IN_CHAIN'}}))).to.contain('with --tls-ca FILE (or SERVICE_TLS_CA)')
    expect(untrustedCertificateAdvice({code: 'ERR_TLS_CERT_ALTNAME_INVALID'})).to.contain('does not name the address connected to')
    expect(untrustedCertificateAdvice(Object.assign(new TypeError('fetch failed'), {cause: {code: 'ECONNREFUSED'}}))).to.equal(undefined)
  })
})
