/**
 * What the programs say when a TLS connection is refused for the server's certificate (src/cli/tls.ts sets up
 * serving HTTPS and the CAs trusted): the worker joining its supervisor, the supervisor calling a worker back.
 */
/** A certificate (with its chain) and its private key, both PEM, to serve HTTPS with. */
export interface TlsIdentity {
  cert: Buffer
  key: Buffer
}

export const TLS_ENV = {ca: 'SERVICE_TLS_CA', cert: 'SERVICE_TLS_CERT', key: 'SERVICE_TLS_KEY'} as const

/** OpenSSL's codes for a certificate the client does not trust, as Node's connection errors carry them. */
const UNTRUSTED = new Set(['DEPTH_ZERO_SELF_SIGNED_CERT', 'SELF_SIGNED_CERT_IN_CHAIN', 'UNABLE_TO_GET_ISSUER_CERT_LOCALLY', 'UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'CERT_UNTRUSTED', 'ERR_TLS_CERT_ALTNAME_INVALID', 'CERT_HAS_EXPIRED'])

/** What to do about a connection refused for the server's certificate; none for any other failure. */
export function untrustedCertificateAdvice(error: unknown): string | undefined {
  const code = ((error as {cause?: {code?: string}})?.cause ?? (error as {code?: string}))?.code
  if (!code || !UNTRUSTED.has(code)) return undefined
  if (code === 'ERR_TLS_CERT_ALTNAME_INVALID') return 'its certificate does not name the address connected to; connect by a name or IP address the certificate lists'
  if (code === 'CERT_HAS_EXPIRED') return 'its certificate has expired'
  return `its certificate is not signed by a CA this program trusts (${code}); give the CA that signed it, or the certificate itself if it is self-signed, with --tls-ca FILE (or ${TLS_ENV.ca})`
}
