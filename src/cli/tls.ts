/**
 * TLS of the service programs and of servicectl. A service given `--tls-cert` and `--tls-key` serves HTTPS; any
 * program given `--tls-ca` trusts that CA (or self-signed certificate) as well as the system's, for every HTTPS
 * connection it makes: a worker to its supervisor and back, servicectl to the service. The CA is added to the
 * process's default trust, which Node's fetch and node:https both read, so no client needs options of its own.
 */
import {Flags} from '@oclif/core'
import {readFile} from 'node:fs/promises'
import * as tls from 'node:tls'

import {type TlsIdentity, TLS_ENV, untrustedCertificateAdvice} from '../kernel/certificates.js'
import {ServiceError} from '../kernel/errors.js'


/** `--tls-ca`, for every program that connects to a service. */
export const tlsCaFlag = (options: {helpGroup?: string} = {}) =>
  Flags.string({
    ...options,
    description: `A CA certificate (PEM) to trust besides the system's, for a service whose certificate it signed or a self-signed one (also ${TLS_ENV.ca}).`,
    env: TLS_ENV.ca,
  })

/** `--tls-cert`, `--tls-key` and `--tls-ca` of the programs that run a service. */
export const serviceTlsFlags = () => ({
  'tls-ca': tlsCaFlag(),
  'tls-cert': Flags.string({dependsOn: ['tls-key'], description: `Serve HTTPS with this certificate (PEM, with its chain; also ${TLS_ENV.cert}).`, env: TLS_ENV.cert}),
  'tls-key': Flags.string({dependsOn: ['tls-cert'], description: `The private key (PEM) of --tls-cert (also ${TLS_ENV.key}).`, env: TLS_ENV.key}),
})

async function readPem(file: string, flag: string): Promise<Buffer> {
  try {
    return await readFile(file)
  } catch (error) {
    throw new ServiceError(400, 'invalid_request', `--${flag} ${file} cannot be read (${(error as NodeJS.ErrnoException).code ?? (error as Error).message}).`)
  }
}

/** The certificate and key to serve HTTPS with, checked to be PEM that belong together; none without --tls-cert. */
export async function loadTlsIdentity(flags: {'tls-cert'?: string; 'tls-key'?: string}): Promise<TlsIdentity | undefined> {
  const {'tls-cert': certFile, 'tls-key': keyFile} = flags
  if (!certFile || !keyFile) return undefined
  const identity = {cert: await readPem(certFile, 'tls-cert'), key: await readPem(keyFile, 'tls-key')}
  try {
    tls.createSecureContext(identity)
  } catch (error) {
    throw new ServiceError(400, 'invalid_request', `--tls-cert ${certFile} and --tls-key ${keyFile} cannot serve HTTPS: ${(error as Error).message}; give a PEM certificate and the private key it was made with.`)
  }

  return identity
}

/** Adds the certificates of a PEM file to those this process trusts, besides the system's. */
export async function trustCertificateAuthority(file: string | undefined): Promise<void> {
  if (!file) return
  const pem = (await readPem(file, 'tls-ca')).toString('utf8')
  const certificates = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? []
  if (certificates.length === 0) throw new ServiceError(400, 'invalid_request', `--tls-ca ${file} holds no PEM certificate (-----BEGIN CERTIFICATE-----).`)
  if (typeof tls.setDefaultCACertificates !== 'function')
    throw new ServiceError(400, 'invalid_request', `--tls-ca needs Node.js 22.19 or newer (this is ${process.version}); on this one, start the program with NODE_EXTRA_CA_CERTS=${file} instead.`)
  tls.setDefaultCACertificates([...tls.getCACertificates('default'), ...certificates])
}

/** A fetch whose connection refused for the server's certificate fails with what to do about it. */
export const adviseOnCertificates =
  (fetcher: typeof fetch): typeof fetch =>
  async (input, init) => {
    try {
      return await fetcher(input, init)
    } catch (error) {
      const advice = untrustedCertificateAdvice(error)
      if (!advice) throw error
      throw new ServiceError(503, 'connection_failed', `cannot connect to ${new URL(input instanceof Request ? input.url : input).origin}: ${advice}.`)
    }
  }
