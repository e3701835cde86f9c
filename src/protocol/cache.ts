// Wire types of the weights cache routes; see launch.ts for why they live in src/protocol/.

/** One model version in a worker's weights cache, as `GET /v1/cache/models` lists it. */
export interface CachedModel {
  model_version: string
  model_name: string
  model_size_in_billions: string
  model_format: string
  quantization: string
  /** The entry's folder. */
  path: string
  files: Array<{name: string; path: string; size: number}>
  /** Bytes of complete files. */
  size_bytes: number
  /** Bytes of unfinished downloads (`.part` files) a launch would resume. */
  partial_bytes: number
  complete: boolean
  hub: string | null
  repo: string | null
  revision: string | null
  commit: string | null
  downloaded_at: string | null
}
