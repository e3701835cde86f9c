/**
 * The fetch servicectl gives its client: a request on node:http (or node:https) answered with a Response-shaped
 * object. Node's own fetch, Response, Headers and FormData all load Node's bundled undici on first use (5 MB of
 * JavaScript, then llhttp's WebAssembly), which was the largest single cost of a short command such as
 * `servicectl list`. What this does not cover goes to Node's fetch as before: uploads (FormData and other
 * non-text bodies, whose multipart encoding fetch writes), a Request, headers given as anything but a plain
 * object, and redirects, which fetch follows.
 */
import type {IncomingMessage} from 'node:http'
import {createRequire} from 'node:module'
import {Readable} from 'node:stream'

// Through require: an ES import of node:http builds its whole namespace, whose WebSocket getter loads undici.
const require = createRequire(import.meta.url)

/** The parts of a Response the client reads: status, headers, and the body once, as text, JSON, bytes or a stream. */
interface ResponseShape {
  readonly ok: boolean
  readonly status: number
  readonly statusText: string
  readonly headers: {get(name: string): string | null}
  readonly body: ReadableStream<Uint8Array>
  arrayBuffer(): Promise<ArrayBuffer>
  json(): Promise<unknown>
  text(): Promise<string>
}

export const httpFetch: typeof fetch = async (input, init = {}) => {
  const {body, headers = {}, method = 'GET', signal} = init
  const plainHeaders = Object.getPrototypeOf(headers) === Object.prototype
  const textBody = body === undefined || body === null || typeof body === 'string'
  if (!textBody || !plainHeaders || !(typeof input === 'string' || input instanceof URL)) return fetch(input, init)
  const url = new URL(input)
  const {request} = require(url.protocol === 'https:' ? 'node:https' : 'node:http') as typeof import('node:http')
  const message = await new Promise<IncomingMessage>((resolve, reject) => {
    const sent = request(url, {headers: {...(headers as Record<string, string>), ...(typeof body === 'string' ? {'content-length': String(Buffer.byteLength(body))} : {})}, method, signal: signal ?? undefined}, resolve)
    sent.on('error', reject)
    sent.end(body ?? undefined)
  })
  if (message.statusCode! >= 300 && message.statusCode! < 400 && message.headers.location) {
    message.resume()
    return fetch(input, init)
  }

  return responseOf(message) as unknown as Response
}

function responseOf(message: IncomingMessage): ResponseShape {
  const status = message.statusCode!
  let stream: ReadableStream<Uint8Array> | undefined
  const bytes = async (): Promise<Buffer> => {
    const chunks: Buffer[] = []
    for await (const chunk of message) chunks.push(chunk as Buffer)
    return Buffer.concat(chunks)
  }

  return {
    async arrayBuffer() {
      const buffer = await bytes()
      return buffer.buffer.slice(buffer.byteOffset, buffer.byteOffset + buffer.byteLength) as ArrayBuffer
    },
    get body() {
      stream ??= Readable.toWeb(message) as ReadableStream<Uint8Array>
      return stream
    },
    headers: {
      get(name: string) {
        const value = message.headers[name.toLowerCase()]
        return value === undefined ? null : Array.isArray(value) ? value.join(', ') : value
      },
    },
    async json() {
      return JSON.parse((await bytes()).toString('utf8'))
    },
    ok: status >= 200 && status < 300,
    status,
    statusText: message.statusMessage ?? '',
    async text() {
      return (await bytes()).toString('utf8')
    },
  }
}
