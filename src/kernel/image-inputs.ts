/**
 * Pictures a chat request shows a model (OpenAI's `image_url` parts, Anthropic's `image` blocks), read once here for
 * every model type and engine: a data URL or base64 decoded, an http(s) URL fetched, each within bounds (bytes per
 * picture, pictures and bytes per request, time), and known to be a PNG, JPEG, WebP or GIF by its first bytes.
 *
 * A URL is a request the service makes on the client's behalf, so it never reaches the service's own machine or
 * network (loopback, link-local, private and other special addresses) unless the operator lists the host in
 * SERVICE_ALLOWED_IMAGE_HOSTS. The addresses checked are those the connection then uses (the lookup is the
 * connection's own), at every redirect, so a name that resolves elsewhere the second time reaches nothing it may not.
 */
import type {LookupAddress} from 'node:dns'
import type {IncomingMessage} from 'node:http'

import {lookup} from 'node:dns'
import {createRequire} from 'node:module'
import {BlockList, isIP} from 'node:net'

import {badRequest, ServiceError} from './errors.js'

export const ALLOWED_IMAGE_HOSTS_SETTING = 'SERVICE_ALLOWED_IMAGE_HOSTS'

// Through require: an ES import of node:http builds its whole namespace, whose WebSocket getter loads Node's undici,
// and settings (so servicectl and the idle service) import this module.
const require = createRequire(import.meta.url)

/** What one request may show a model: more would hold more memory per request than the JSON body itself may. */
export interface ImageInputLimits {
  bytesPerImage: number
  imagesPerRequest: number
  totalBytes: number
  /** For the whole fetch of a URL, redirects and body included. */
  fetchMs: number
  redirects: number
}

export const IMAGE_INPUT_LIMITS: ImageInputLimits = {bytesPerImage: 8 * 1024 * 1024, fetchMs: 10_000, imagesPerRequest: 8, redirects: 3, totalBytes: 16 * 1024 * 1024}

/** A picture as a chat engine receives it. */
export interface ChatImage {
  /** The file's bytes, base64. */
  data: string
  /** `image/png`, `image/jpeg`, `image/webp` or `image/gif`, as read from the bytes. */
  mediaType: string
  /** OpenAI's `detail` (low, high, auto), for engines that read it. */
  detail?: string
}

/** Where a picture comes from, and the request field that gave it, which every refusal names. */
export interface ImageSource {
  field: string
  /** An http(s) URL or a data URL. */
  url?: string
  /** The bytes, base64 (Anthropic's base64 source), with the media type the client declared. */
  data?: string
  mediaType?: string
  detail?: string
}

export interface ImageReader {
  /** The pictures, in order; a 400 naming the field of the first that is refused. */
  read(sources: readonly ImageSource[], signal: AbortSignal): Promise<ChatImage[]>
}

const SIGNATURES: Array<[string, (bytes: Buffer) => boolean]> = [
  ['image/png', (bytes) => bytes.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))],
  ['image/jpeg', (bytes) => bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff],
  ['image/gif', (bytes) => ['GIF87a', 'GIF89a'].includes(bytes.subarray(0, 6).toString('latin1'))],
  ['image/webp', (bytes) => bytes.subarray(0, 4).toString('latin1') === 'RIFF' && bytes.subarray(8, 12).toString('latin1') === 'WEBP'],
]

const mediaTypeOf = (bytes: Buffer) => SIGNATURES.find(([, matches]) => matches(bytes))?.[0]

/** Addresses a URL from a client must not reach: this machine, its networks, and addresses of no one. */
const SPECIAL = new BlockList()
for (const [network, prefix] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12], ['192.0.0.0', 24],
  ['192.168.0.0', 16], ['198.18.0.0', 15], ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const)
  SPECIAL.addSubnet(network, prefix, 'ipv4')
// 6to4 (2002::/16) and Teredo (2001::/32) carry an IPv4 address inside, which may be a private one.
for (const [network, prefix] of [['::', 128], ['::1', 128], ['fc00::', 7], ['fe80::', 10], ['ff00::', 8], ['64:ff9b::', 96], ['2001::', 32], ['2001:db8::', 32], ['2002::', 16]] as const)
  SPECIAL.addSubnet(network, prefix, 'ipv6')

/** Whether an address is one of those; an IPv4 address written as IPv6 (`::ffff:127.0.0.1`) is taken as the IPv4 one. */
export function isSpecialAddress(address: string): boolean {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1]
  if (mapped) return SPECIAL.check(mapped, 'ipv4')
  const family = isIP(address)
  return family === 0 || SPECIAL.check(address, family === 4 ? 'ipv4' : 'ipv6')
}

const hostName = (url: URL) => url.hostname.replace(/^\[|\]$/g, '').toLowerCase()

const refusedAddress = (field: string, host: string, address: string) =>
  badRequest(
    `\`${field}\` names ${host}, at ${address}: an address of this machine or a private network, which the service does not fetch for a client; send the picture as a data URL, or ask the operator to list the host in ${ALLOWED_IMAGE_HOSTS_SETTING}.`,
    field,
  )

/** The connection's own lookup, refusing any special address of a host the operator did not list. */
function checkedLookup(field: string, host: string, allowed: boolean) {
  return (name: string, options: object, callback: (error: Error | null, address: string | LookupAddress[], family?: number) => void) => {
    lookup(name, {...options, all: true}, (error, addresses) => {
      if (error) return callback(badRequest(`\`${field}\`: the host ${host} cannot be found (${error.message}).`, field), [])
      const refused = allowed ? undefined : addresses.find((entry) => isSpecialAddress(entry.address))
      if (refused) return callback(refusedAddress(field, host, refused.address), [])
      if ((options as {all?: boolean}).all) return callback(null, addresses)
      callback(null, addresses[0].address, addresses[0].family)
    })
  }
}

const sizeOf = (bytes: number) => (bytes >= 1024 * 1024 ? `${+(bytes / 1024 / 1024).toFixed(1)} MiB` : `${bytes} bytes`)

interface Budget {
  bytes: number
}

function within(limits: ImageInputLimits, budget: Budget, field: string, bytes: number): void {
  const {bytesPerImage, totalBytes} = limits
  if (bytes > bytesPerImage) throw badRequest(`\`${field}\` is over ${sizeOf(bytesPerImage)}, the most a picture may have; send a smaller one.`, field)
  if (budget.bytes + bytes > totalBytes) throw badRequest(`\`${field}\` brings the request's pictures over ${sizeOf(totalBytes)} in all; send fewer or smaller ones.`, field)
  budget.bytes += bytes
}

/** One GET, its body read to the per-picture bound; redirects are the caller's. */
function get(url: URL, field: string, allowed: boolean, signal: AbortSignal): Promise<IncomingMessage> {
  const host = hostName(url)
  if (isIP(host) && !allowed && isSpecialAddress(host)) return Promise.reject(refusedAddress(field, host, host))
  const {request: send} = require(url.protocol === 'https:' ? 'node:https' : 'node:http') as typeof import('node:http')
  return new Promise((resolve, reject) => {
    const outgoing = send(url, {headers: {accept: 'image/*'}, lookup: checkedLookup(field, host, allowed) as never, signal}, resolve)
    outgoing.once('error', reject)
    outgoing.end()
  })
}

async function bodyOf(limits: ImageInputLimits, response: IncomingMessage, field: string): Promise<Buffer> {
  const declared = Number(response.headers['content-length'])
  if (declared > limits.bytesPerImage) {
    response.destroy()
    throw badRequest(`\`${field}\` is ${declared} bytes, over ${sizeOf(limits.bytesPerImage)}, the most a picture may have; send a smaller one.`, field)
  }

  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of response as AsyncIterable<Buffer>) {
    size += chunk.length
    if (size > limits.bytesPerImage) {
      response.destroy()
      throw badRequest(`\`${field}\` is over ${sizeOf(limits.bytesPerImage)}, the most a picture may have; send a smaller one.`, field)
    }

    chunks.push(chunk)
  }

  return Buffer.concat(chunks)
}

async function fetchImage(limits: ImageInputLimits, start: URL, field: string, allowedHosts: readonly string[], signal: AbortSignal): Promise<Buffer> {
  const timeout = AbortSignal.timeout(limits.fetchMs)
  const both = AbortSignal.any([signal, timeout])
  let url = start
  try {
    for (let hop = 0; hop <= limits.redirects; hop++) {
      if (url.protocol !== 'http:' && url.protocol !== 'https:') throw badRequest(`\`${field}\` leads to a ${url.protocol} URL; only http and https are fetched.`, field)
      const response = await get(url, field, allowedHosts.includes(hostName(url)), both)
      const status = response.statusCode ?? 0
      if (status >= 300 && status < 400 && response.headers.location) {
        response.resume()
        url = new URL(response.headers.location, url)
        continue
      }

      if (status !== 200) {
        response.resume()
        throw badRequest(`\`${field}\`: fetching ${url.host} answered ${status}; send a URL that serves the picture, or the picture as a data URL.`, field)
      }

      return await bodyOf(limits, response, field)
    }

    throw badRequest(`\`${field}\` redirects more than ${limits.redirects} times; send the picture's own URL.`, field)
  } catch (error) {
    if (error instanceof ServiceError) throw error
    if (timeout.aborted) throw badRequest(`\`${field}\`: ${url.host} did not send the picture within ${limits.fetchMs / 1000} s; send it as a data URL.`, field)
    if (signal.aborted) throw error
    throw badRequest(`\`${field}\`: the picture at ${url.host} could not be fetched (${(error as Error).message}).`, field)
  }
}

const DATA_URL = /^data:([^;,]*)((?:;[^;,]*)*),/

function decodeDataUrl(limits: ImageInputLimits, url: string, field: string): Buffer {
  const match = DATA_URL.exec(url.slice(0, 256))
  if (!match || !match[2].split(';').includes('base64'))
    throw badRequest(`\`${field}\` is a data URL that is not base64; send data:image/png;base64,… (or jpeg, webp, gif).`, field)
  return decodeBase64(limits, url.slice(match[0].length), field)
}

function decodeBase64(limits: ImageInputLimits, text: string, field: string): Buffer {
  // Decoded size known before decoding, so an oversized picture is refused without holding it twice.
  if ((text.length * 3) / 4 > limits.bytesPerImage + 3)
    throw badRequest(`\`${field}\` is over ${sizeOf(limits.bytesPerImage)}, the most a picture may have; send a smaller one.`, field)
  if (!/^[A-Za-z0-9+/_-]*={0,2}$/.test(text)) throw badRequest(`\`${field}\` is not valid base64.`, field)
  return Buffer.from(text, 'base64')
}

const ACCEPTED = 'PNG, JPEG, WebP or GIF'

/** Reads pictures for the routes; `allowedHosts` are the operator's SERVICE_ALLOWED_IMAGE_HOSTS. */
export function imageReader(allowedHosts: readonly string[], limits: ImageInputLimits = IMAGE_INPUT_LIMITS): ImageReader {
  const hosts = allowedHosts.map((host) => host.replace(/^\[|\]$/g, '').toLowerCase())
  return {
    async read(sources, signal) {
      if (sources.length > limits.imagesPerRequest)
        throw badRequest(`\`${sources[limits.imagesPerRequest].field}\`: a request may show a model at most ${limits.imagesPerRequest} pictures.`, sources[limits.imagesPerRequest].field)
      const budget: Budget = {bytes: 0}
      const images: ChatImage[] = []
      for (const source of sources) {
        const {field} = source
        let bytes: Buffer
        if (source.data !== undefined) bytes = decodeBase64(limits, source.data, field)
        else if (source.url?.startsWith('data:')) bytes = decodeDataUrl(limits, source.url, field)
        else {
          let url: URL
          try {
            url = new URL(source.url ?? '')
          } catch {
            throw badRequest(`\`${field}\` must be an http(s) URL or a data URL of a picture.`, field)
          }

          if (url.protocol !== 'http:' && url.protocol !== 'https:') throw badRequest(`\`${field}\` must be an http(s) URL or a data URL of a picture (got a ${url.protocol} URL).`, field)
          bytes = await fetchImage(limits, url, field, hosts, signal)
        }

        within(limits, budget, field, bytes.length)
        const mediaType = mediaTypeOf(bytes)
        if (!mediaType) throw badRequest(`\`${field}\` is not a picture this service reads: its bytes are not a ${ACCEPTED} file.`, field)
        if (source.mediaType !== undefined && source.mediaType !== mediaType)
          throw badRequest(`\`${field}\` says ${source.mediaType}, but its bytes are ${mediaType}; give the picture's own media type.`, field)
        images.push({data: bytes.toString('base64'), mediaType, ...(source.detail ? {detail: source.detail} : {})})
      }

      return images
    },
  }
}
