/**
 * Where `response_format: url` images are kept: in the service's memory, served by `GET /v1/images/files/{id}` with
 * the same permission as the generation (never a path on a worker's disk, as Xinference answers). Retention is
 * bounded both ways: an image is dropped after `ttlMs`, and the oldest go first once `maxBytes` is held.
 */
import type {KernelApi, RouteDefinition} from 'service-toolkit'

import {randomUUID} from 'node:crypto'

interface Stored {
  bytes: Buffer
  mediaType: string
  expires: number
}

export class MediaStore {
  private readonly items = new Map<string, Stored>()
  private held = 0

  constructor(
    private readonly maxBytes: number,
    private readonly ttlMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Keeps the bytes and answers the id they are served under. */
  put(bytes: Buffer, mediaType: string, extension: string): string {
    this.evict()
    const id = `${randomUUID()}.${extension}`
    this.items.set(id, {bytes, expires: this.now() + this.ttlMs, mediaType})
    this.held += bytes.length
    while (this.held > this.maxBytes && this.items.size > 1) this.drop(this.items.keys().next().value!)
    return id
  }

  get(id: string): Stored | undefined {
    this.evict()
    return this.items.get(id)
  }

  private evict() {
    const now = this.now()
    for (const [id, item] of this.items) {
      // Insertion order is expiry order, since every item lives as long.
      if (item.expires > now) break
      this.drop(id)
    }
  }

  private drop(id: string) {
    this.held -= this.items.get(id)?.bytes.length ?? 0
    this.items.delete(id)
  }
}

/** The route that serves a store's files, under `path` (which ends in `:id`). */
export function mediaFileRoute(api: KernelApi, store: MediaStore, path: string, tag: string): RouteDefinition {
  return {
    async handler({params}) {
      const item = store.get(params.id)
      if (!item) throw api.errors.notFound(`no file ${params.id}: files are kept for a while after they are made, then removed; generate it again.`)
      return {body: item.bytes, headers: {'cache-control': 'private, max-age=3600', 'content-type': item.mediaType}, kind: 'json'}
    },
    method: 'GET',
    path,
    permission: 'models:read',
    summary: 'A generated file answered with response_format url, while it is kept',
    tag,
  }
}

/** The URL a client reaches a stored file at: the host it called, so it works through the same address and proxy. */
export function fileUrl(headers: Record<string, string | string[] | undefined>, path: string): string {
  const first = (value: string | string[] | undefined) => (Array.isArray(value) ? value[0] : value?.split(',')[0]?.trim())
  const protocol = first(headers['x-forwarded-proto']) ?? 'http'
  const host = first(headers['x-forwarded-host']) ?? first(headers.host) ?? '127.0.0.1'
  return `${protocol}://${host}${path}`
}
