/**
 * A cluster over TLS: a real supervisor and worker serving HTTPS with a self-signed certificate made at test time,
 * each trusting it with --tls-ca; a model launched and chatted with through the supervisor, servicectl with and
 * without the CA, and a worker without the CA refused with what to do.
 */
import {expect} from 'chai'
import {execa} from 'execa'
import {join} from 'node:path'

import {trustCertificateAuthority} from '../../src/cli/tls.js'
import {writeTinyChatModel} from '../helpers/models.js'
import {callApi, type RunningService, servicectl, startProgram, temporaryDirectory} from '../helpers/service.js'

describe('cluster over TLS (--tls-cert, --tls-key, --tls-ca)', function () {
  let cert: string
  let key: string
  let supervisor: RunningService
  let worker: RunningService | undefined
  const tlsArgs = () => ['--tls-cert', cert, '--tls-key', key]

  before(async () => {
    const directory = await temporaryDirectory()
    cert = join(directory, 'cert.pem')
    key = join(directory, 'key.pem')
    await execa('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'])
    supervisor = await startProgram('service-supervisor', ['-H', '127.0.0.1', '-p', '0', ...tlsArgs(), '--tls-ca', cert])
  })

  after(async () => {
    await worker?.stop()
    await supervisor?.stop()
  })

  it('serves HTTPS, and a worker without the CA is refused with what to do', async () => {
    expect(supervisor.url).to.match(/^https:\/\/127\.0\.0\.1:\d+$/)
    const refused = await startProgram('service-worker', ['-e', supervisor.url, '-H', '127.0.0.1']).catch((error: Error) => error.message)
    expect(refused).to.contain(
      `cannot join the supervisor at ${supervisor.url}: its certificate is not signed by a CA this program trusts (DEPTH_ZERO_SELF_SIGNED_CERT); give the CA that signed it, or the certificate itself if it is self-signed, with --tls-ca FILE (or SERVICE_TLS_CA).`,
    )
  })

  it('runs a model on a worker that serves HTTPS and trusts the pinned CA, reached through the supervisor', async () => {
    worker = await startProgram('service-worker', ['-e', supervisor.url, '-H', '127.0.0.1', ...tlsArgs(), '--tls-ca', cert])
    expect(worker.url).to.match(/^https:/)
    // This test's own requests trust the certificate as the programs do.
    await trustCertificateAuthority(cert)
    const {family} = await writeTinyChatModel(await temporaryDirectory(), 'tiny-chat')
    expect((await callApi(supervisor, 'POST', '/v1/model_registrations/LLM', {model: family, persist: false})).status).to.equal(200)
    const launched = await callApi(supervisor, 'POST', '/v1/models', {model_engine: 'llama.cpp', model_name: 'tiny-chat', n_ctx: 512, n_threads: 1})
    expect(launched.status, JSON.stringify(launched.body)).to.equal(200)
    const chat = await callApi(supervisor, 'POST', '/v1/chat/completions', {max_tokens: 4, messages: [{content: 'Hi', role: 'user'}], model: 'tiny-chat'})
    expect(chat.status, JSON.stringify(chat.body)).to.equal(200)
    expect(chat.body.choices).to.have.length(1)
    // Plain HTTP to the HTTPS port gets nothing.
    expect(await fetch(supervisor.url.replace('https:', 'http:') + '/health').catch(() => 'refused')).to.equal('refused')
  })

  it('lets servicectl in with --tls-ca (or SERVICE_TLS_CA) and refuses the connection without it', async () => {
    const trusted = await servicectl(['list', '-e', supervisor.url, '--tls-ca', cert])
    expect(trusted.exitCode, trusted.stderr).to.equal(0)
    expect(trusted.stdout).to.match(/tiny-chat\s+LLM/)
    expect((await servicectl(['--tls-ca', cert, 'list', '-e', supervisor.url])).exitCode, 'before the subcommand').to.equal(0)
    expect((await servicectl(['list', '-e', supervisor.url], {env: {SERVICE_TLS_CA: cert}})).exitCode).to.equal(0)
    const untrusted = await servicectl(['list', '-e', supervisor.url])
    expect(untrusted.exitCode).to.equal(3)
    expect(untrusted.stderr).to.equal(
      `Error: cannot connect to ${supervisor.url}: its certificate is not signed by a CA this program trusts (DEPTH_ZERO_SELF_SIGNED_CERT); give the CA that signed it, or the certificate itself if it is self-signed, with --tls-ca FILE (or SERVICE_TLS_CA).`,
    )
  })
})
