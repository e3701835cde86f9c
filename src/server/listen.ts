import type {Server} from 'node:http'
import type Koa from 'koa'

import {createRequire} from 'node:module'
import {setFlagsFromString} from 'node:v8'

import type {TlsIdentity} from '../kernel/certificates.js'

import {ServiceError} from '../kernel/errors.js'

/** Required, not imported: an ES import of `node:http` loads Node's bundled undici for nothing (see app.ts). */
const require = createRequire(import.meta.url)

export interface Listening {
  server: Server
  url: string
  /** Stops accepting connections; open ones are closed as soon as they have no request in progress. */
  stopAccepting(): void
  /** Stops accepting connections, gives open requests `graceMs` to finish, then cuts the rest. */
  close(graceMs?: number): Promise<void>
}

/**
 * How many listeners of one event a response may have before Node warns of a leak. A streamed reply's response has
 * seven 'close' listeners from koa's stream pipeline and up to six of the service's (this file, request events, the
 * route's abort, a named request, the model's hold, an upload's files): past Node's default of ten, every streamed
 * request printed a MaxListenersExceededWarning, with a stack trace and a stderr write. A response serves one request,
 * so its listeners cannot pile up past it.
 */
const RESPONSE_LISTENERS = 20

export async function listen(app: Koa, {host, port, tls}: {host: string; port: number; tls?: TlsIdentity}): Promise<Listening> {
  let closed: Promise<void> | undefined
  const handle = app.callback()
  const options = {keepAliveTimeout: 65_000, noDelay: true}
  const {createServer} = (tls ? require('node:https') : require('node:http')) as typeof import('node:https')
  const server: Server = createServer({...options, ...tls}, (request, response) => {
    response.setMaxListeners(RESPONSE_LISTENERS)
    // Once closing, a kept-alive connection is closed as soon as its response is done, so closing ends.
    response.once('close', () => closed && setImmediate(() => server.closeIdleConnections()))
    return handle(request, response)
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) =>
      reject(
        error.code === 'EADDRINUSE'
          ? new ServiceError(500, 'internal_error', `port ${port} on ${host} is already in use; is the service already running? Choose another with --port.`)
          : error.code === 'EADDRNOTAVAIL'
            ? new ServiceError(500, 'internal_error', `cannot listen on ${host}: no network interface has that address.`)
            : error,
      ),
    )
    server.listen(port, host, () => resolve())
  })
  // The launcher held the young generation's growth and TurboFan while the program started (bin/hold-young-generation.js,
  // bin/hold-turbofan.js); back to V8's defaults.
  setFlagsFromString('--semi-space-growth-factor=2')
  setFlagsFromString('--turbofan')
  const address = server.address()
  const boundPort = typeof address === 'object' && address ? address.port : port
  const shownHost = host.includes(':') ? `[${host}]` : host === '0.0.0.0' ? '127.0.0.1' : host
  const stopAccepting = () => {
    closed ??= new Promise((resolve) => server.close(() => resolve()))
    server.closeIdleConnections()
  }

  return {
    async close(graceMs = 2000) {
      stopAccepting()
      const timer = setTimeout(() => server.closeAllConnections(), graceMs)
      await closed
      clearTimeout(timer)
    },
    server,
    stopAccepting,
    url: `${tls ? 'https' : 'http'}://${shownHost}:${boundPort}`,
  }
}
