import type {Server} from 'node:http'
import type Koa from 'koa'

import {createRequire} from 'node:module'

import {ServiceError} from '../kernel/errors.js'

/** Required, not imported: an ES import of `node:http` loads Node's bundled undici for nothing (see app.ts). */
const {createServer} = createRequire(import.meta.url)('node:http') as typeof import('node:http')

export interface Listening {
  server: Server
  url: string
  /** Stops accepting connections, gives open requests `graceMs` to finish, then cuts the rest. */
  close(graceMs?: number): Promise<void>
}

export async function listen(app: Koa, {host, port}: {host: string; port: number}): Promise<Listening> {
  const server = createServer({keepAliveTimeout: 65_000, noDelay: true}, app.callback())
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
  const address = server.address()
  const boundPort = typeof address === 'object' && address ? address.port : port
  const shownHost = host.includes(':') ? `[${host}]` : host === '0.0.0.0' ? '127.0.0.1' : host
  return {
    close: (graceMs = 2000) =>
      new Promise((resolve) => {
        const timer = setTimeout(() => server.closeAllConnections(), graceMs)
        server.close(() => {
          clearTimeout(timer)
          resolve()
        })
        server.closeIdleConnections()
      }),
    server,
    url: `http://${shownHost}:${boundPort}`,
  }
}
