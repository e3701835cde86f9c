/**
 * The model hubs weights come from, each with its real URL layout and file-listing API, so that a launch
 * works against huggingface.co, a mirror of it, or ModelScope without any other tool installed.
 *
 * - Hugging Face: `GET {endpoint}/api/models/{repo}/revision/{revision}?blobs=true` lists the files with
 *   their size and, for LFS files (every GGUF), their SHA-256; the answer's `sha` is the commit, and files
 *   are fetched from `{endpoint}/{repo}/resolve/{commit}/{path}` so that all files of one download come from
 *   the same commit. `HF_ENDPOINT` points at a mirror, `HF_TOKEN` opens gated and private repos.
 * - ModelScope: `GET {endpoint}/api/v1/models/{repo}/repo/files?Revision=…&Recursive=true` lists `Path`,
 *   `Size` and `Sha256`; files come from `{endpoint}/api/v1/models/{repo}/repo?Revision=…&FilePath=…`.
 *   `MODELSCOPE_ENDPOINT` (a full URL) or `MODELSCOPE_DOMAIN` (a host name, as the modelscope SDK reads it)
 *   point elsewhere, `MODELSCOPE_API_TOKEN` opens private repos.
 */
import {ServiceError} from '../kernel/errors.js'
import {HUB_NAMES, type HubName} from '../kernel/settings.js'

export {HUB_NAMES, type HubName} from '../kernel/settings.js'

export interface RemoteFile {
  path: string
  size: number
  /** Lower-case hex, when the hub publishes one. */
  sha256: string | null
}

export interface RepoSnapshot {
  hub: HubName
  repo: string
  /** As asked for (`main`, `master`, a tag or a commit). */
  revision: string
  /** The commit the revision pointed to, when the hub says. */
  commit: string | null
  files: Map<string, RemoteFile>
}

export interface Hub {
  readonly name: HubName
  readonly endpoint: string
  /** Request headers for this hub (authorization when a token is set). */
  readonly headers: Record<string, string>
  readonly defaultRevision: string
  /** Lists the repo's files at a revision; one request. */
  snapshot(repo: string, revision: string, signal?: AbortSignal): Promise<RepoSnapshot>
  fileUrl(snapshot: RepoSnapshot, path: string): string
  /** The error a person sees for a failed request, naming the URL and what to do about it. */
  failure(response: Response, url: string): ServiceError
}

export interface HubOptions {
  fetch?: typeof fetch
  /** A file-list request that gets no answer for this long is given up (and retried by the caller). */
  timeoutMs?: number
}

const encodePath = (path: string) => path.split('/').map(encodeURIComponent).join('/')
const trimSlash = (url: string) => url.replace(/\/+$/, '')

/** What to try when a hub cannot be reached at all. */
export function unreachable(hub: Hub, url: string, cause: unknown): ServiceError {
  const reason = networkReason(cause)
  const switchHint =
    hub.name === 'huggingface'
      ? 'pick another hub with SERVICE_MODEL_SRC=modelscope (or --download-hub modelscope), or a mirror with HF_ENDPOINT'
      : 'pick another hub with SERVICE_MODEL_SRC=huggingface (or --download-hub huggingface), or another endpoint with MODELSCOPE_ENDPOINT'
  return new ServiceError(
    503,
    'hub_unreachable',
    `cannot reach ${hub.name} at ${hub.endpoint} (${reason}) while fetching ${url}; check the network connection, or ${switchHint}.`,
  )
}

/** `ECONNREFUSED`, `ENOTFOUND`, … from a failed fetch, or its message. */
export function networkReason(error: unknown): string {
  const cause = (error as {cause?: {code?: string; message?: string}})?.cause
  return cause?.code ?? cause?.message ?? (error as Error)?.message ?? String(error)
}

async function readJson(hub: Hub, {fetch: fetchImpl = fetch, timeoutMs = 30_000}: HubOptions, url: string, signal?: AbortSignal): Promise<unknown> {
  let response: Response
  try {
    response = await fetchImpl(url, {headers: {accept: 'application/json', ...hub.headers}, signal: AbortSignal.any([AbortSignal.timeout(timeoutMs), ...(signal ? [signal] : [])])})
  } catch (error) {
    if (signal?.aborted) throw error
    if ((error as Error).name === 'TimeoutError') throw new ServiceError(502, 'hub_busy', `${hub.name} did not answer ${url} within ${timeoutMs / 1000} s.`)
    throw unreachable(hub, url, error)
  }

  if (!response.ok) {
    await response.body?.cancel()
    throw hub.failure(response, url)
  }

  try {
    return await response.json()
  } catch (error) {
    throw new ServiceError(502, 'hub_error', `${hub.name} answered ${url} with something that is not JSON (${(error as Error).message}).`)
  }
}

/** A retryable answer (the hub is busy or briefly broken) rather than a refusal. */
export function isTransient(status: number): boolean {
  return status === 408 || status === 429 || status >= 500
}

function transientFailure(hub: Hub, response: Response, url: string): ServiceError {
  return new ServiceError(502, 'hub_busy', `${hub.name} answered ${response.status} ${response.statusText} for ${url}; it may be busy, so try again later.`)
}

export class HuggingFace implements Hub {
  readonly name = 'huggingface' as const
  readonly defaultRevision = 'main'
  readonly endpoint: string
  readonly headers: Record<string, string>
  private readonly token?: string

  constructor(
    env: NodeJS.ProcessEnv,
    private readonly options: HubOptions = {},
  ) {
    this.endpoint = trimSlash(env.HF_ENDPOINT || 'https://huggingface.co')
    this.token = env.HF_TOKEN || env.HUGGING_FACE_HUB_TOKEN || undefined
    this.headers = this.token ? {authorization: `Bearer ${this.token}`} : {}
  }

  async snapshot(repo: string, revision: string, signal?: AbortSignal): Promise<RepoSnapshot> {
    const url = `${this.endpoint}/api/models/${repo}/revision/${encodeURIComponent(revision)}?blobs=true`
    const body = (await readJson(this, this.options, url, signal)) as {
      sha?: string
      siblings?: Array<{rfilename: string; size?: number; lfs?: {sha256?: string; size?: number} | null}>
    }
    const files = new Map<string, RemoteFile>()
    for (const sibling of body.siblings ?? []) {
      const size = sibling.lfs?.size ?? sibling.size
      if (typeof sibling.rfilename !== 'string' || typeof size !== 'number') continue
      files.set(sibling.rfilename, {path: sibling.rfilename, sha256: sibling.lfs?.sha256?.toLowerCase() ?? null, size})
    }

    return {commit: typeof body.sha === 'string' ? body.sha : null, files, hub: this.name, repo, revision}
  }

  fileUrl(snapshot: RepoSnapshot, path: string): string {
    return `${this.endpoint}/${snapshot.repo}/resolve/${encodeURIComponent(snapshot.commit ?? snapshot.revision)}/${encodePath(path)}`
  }

  /**
   * The hub says why in `X-Error-Code`. Without a token it answers 401 for a missing repo as well as for a
   * private one (so that private names do not leak), so a bare 401 is reported as both possibilities.
   */
  failure(response: Response, url: string): ServiceError {
    const code = response.headers.get('x-error-code')
    const tokenHint = this.token
      ? 'HF_TOKEN is set, but that token has no access to it: accept the model\'s license on its page with the account the token belongs to'
      : 'set HF_TOKEN to a token of an account that has accepted the model\'s license on its page'
    if (code === 'GatedRepo') return new ServiceError(502, 'hub_gated', `gated repo on huggingface: ${url}; ${tokenHint}.`)
    if (code === 'RevisionNotFound') return new ServiceError(502, 'hub_not_found', `revision not found on huggingface: ${url}; check model_revision in the registration.`)
    if (response.status === 404 || code === 'RepoNotFound' || code === 'EntryNotFound') {
      const maybePrivate = response.status === 401 && !this.token ? ' (or it is private or gated: then set HF_TOKEN)' : ''
      return new ServiceError(502, 'hub_not_found', `repo or file not found on huggingface${maybePrivate}: ${url}`)
    }

    if (response.status === 401 || response.status === 403)
      return new ServiceError(502, 'hub_gated', `huggingface refused access (${response.status}) to ${url}: the repo is gated or private; ${tokenHint}.`)
    return isTransient(response.status) ? transientFailure(this, response, url) : new ServiceError(502, 'hub_error', `huggingface answered ${response.status} ${response.statusText} for ${url}.`)
  }
}

export class ModelScope implements Hub {
  readonly name = 'modelscope' as const
  readonly defaultRevision = 'master'
  readonly endpoint: string
  readonly headers: Record<string, string>
  private readonly token?: string

  constructor(
    env: NodeJS.ProcessEnv,
    private readonly options: HubOptions = {},
  ) {
    this.endpoint = trimSlash(env.MODELSCOPE_ENDPOINT || (env.MODELSCOPE_DOMAIN ? `https://${env.MODELSCOPE_DOMAIN}` : 'https://www.modelscope.cn'))
    this.token = env.MODELSCOPE_API_TOKEN || undefined
    // ModelScope's open API takes the SDK token as a bearer token and, on older routes, as the session cookie.
    this.headers = this.token ? {authorization: `Bearer ${this.token}`, cookie: `m_session_id=${this.token}`} : {}
  }

  async snapshot(repo: string, revision: string, signal?: AbortSignal): Promise<RepoSnapshot> {
    const url = `${this.endpoint}/api/v1/models/${repo}/repo/files?Revision=${encodeURIComponent(revision)}&Recursive=true`
    const body = (await readJson(this, this.options, url, signal)) as {
      Code?: number
      Success?: boolean
      Message?: string
      Data?: {Files?: Array<{Path?: string; Name?: string; Size?: number; Sha256?: string; Type?: string}>}
    }
    // The API answers some failures (an unknown repo or revision) with HTTP 200 and Success: false.
    if (body.Success === false || (typeof body.Code === 'number' && body.Code !== 200))
      throw new ServiceError(502, 'hub_not_found', `repo or file not found on modelscope: ${url} (${body.Message ?? `code ${body.Code}`})`)
    const files = new Map<string, RemoteFile>()
    for (const file of body.Data?.Files ?? []) {
      const path = file.Path ?? file.Name
      if (file.Type === 'tree' || typeof path !== 'string' || typeof file.Size !== 'number') continue
      files.set(path, {path, sha256: file.Sha256?.toLowerCase() || null, size: file.Size})
    }

    return {commit: null, files, hub: this.name, repo, revision}
  }

  fileUrl(snapshot: RepoSnapshot, path: string): string {
    return `${this.endpoint}/api/v1/models/${snapshot.repo}/repo?Revision=${encodeURIComponent(snapshot.revision)}&FilePath=${encodeURIComponent(path)}`
  }

  failure(response: Response, url: string): ServiceError {
    if (response.status === 404) return new ServiceError(502, 'hub_not_found', `repo or file not found on modelscope: ${url}`)
    if (response.status === 401 || response.status === 403)
      return new ServiceError(
        502,
        'hub_gated',
        `modelscope refused access (${response.status}) to ${url}: the repo is private or needs its terms accepted; ${this.token ? 'MODELSCOPE_API_TOKEN is set but has no access to it' : 'set MODELSCOPE_API_TOKEN to your ModelScope SDK token'}.`,
      )
    return isTransient(response.status) ? transientFailure(this, response, url) : new ServiceError(502, 'hub_error', `modelscope answered ${response.status} ${response.statusText} for ${url}.`)
  }
}

export function createHub(name: string, env: NodeJS.ProcessEnv, options: HubOptions = {}): Hub {
  if (name === 'huggingface') return new HuggingFace(env, options)
  if (name === 'modelscope') return new ModelScope(env, options)
  throw new ServiceError(400, 'invalid_request', `model hub "${name}" is not supported; use one of: ${HUB_NAMES.join(', ')}.`, 'download_hub')
}
