/**
 * A local model hub for tests and benchmarks: the Hugging Face and ModelScope URL layouts and file-listing APIs
 * the service uses, over files on disk, with every request recorded and faults to inject (a transfer held part-way
 * until the test releases it or drops its connection, corrupt bytes, answers of 503, a gated repo, a hub
 * that is down).
 *
 * Hugging Face: `GET /api/models/{repo}/revision/{revision}?blobs=true` (or `/api/models/{repo}` for the default
 * branch), `GET /api/models/{repo}/tree/{revision}`, then `GET /{repo}/resolve/{revision}/{file}`, which redirects
 * to `/cdn/{sha256}` as huggingface.co redirects LFS files to its CDN; `GET /api/models?search=…&limit=…[&full=true]`
 * searches repo ids for every word (case-insensitive substrings). ModelScope: `GET /api/v1/models/{repo}/repo/files?Revision=…&Recursive=true` and
 * `GET /api/v1/models/{repo}/repo?Revision=…&FilePath=…`. Point the service at it with `HF_ENDPOINT` and
 * `MODELSCOPE_ENDPOINT` set to `url`.
 */
import {createHash} from 'node:crypto'
import {createReadStream} from 'node:fs'
import {stat} from 'node:fs/promises'
import {createServer, type IncomingMessage, type Server, type ServerResponse} from 'node:http'
import type {AddressInfo, Socket} from 'node:net'

export interface FakeHubFile {
  path: string
  source: string
  size: number
  sha256: string
}

export interface FakeHubRepo {
  id: string
  /** What the repo's default branch is called on each hub: `main` on Hugging Face, `master` on ModelScope. */
  commit: string
  files: Map<string, FakeHubFile>
  /** A gated repo serves its files only to this bearer token; listing it stays open, as on huggingface.co. */
  token?: string
}

export interface RecordedRequest {
  method: string
  url: string
  /** `listing` for the file APIs, `file` for requests that send a file's bytes (after any redirect). */
  kind: 'listing' | 'redirect' | 'file' | 'other'
  range?: string
}

interface Hold {
  file: string
  at: number
  released: Promise<void>
  signalReached: () => void
  /** Transfers waiting at this hold, so that `drop()` can cut them. */
  waiting: Set<ServerResponse>
}

export class FakeHub {
  readonly requests: RecordedRequest[] = []
  private readonly repos = new Map<string, FakeHubRepo>()
  private readonly corrupt = new Set<string>()
  private readonly holds: Hold[] = []
  private failures: Array<{count: number; status: number; matching: string}> = []
  private readonly sockets = new Set<Socket>()
  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  static async start(): Promise<FakeHub> {
    let hub: FakeHub | undefined
    const server = createServer((request, response) => {
      hub!.handle(request, response).catch((error) => {
        if (!response.headersSent) response.writeHead(500).end(String(error))
        else response.destroy()
      })
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    hub = new FakeHub(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`)
    server.on('connection', (socket) => {
      hub!.sockets.add(socket)
      socket.once('close', () => hub!.sockets.delete(socket))
    })
    return hub
  }

  /** Serves local files as a repo's files; sizes and SHA-256 are read from them. `commit`: the revision a catalogue pins. */
  async addRepo(id: string, files: Record<string, string>, {commit, token}: {commit?: string; token?: string} = {}): Promise<FakeHubRepo> {
    const entries = await Promise.all(
      Object.entries(files).map(async ([path, source]) => {
        const hash = createHash('sha256')
        for await (const chunk of createReadStream(source, {highWaterMark: 1 << 20})) hash.update(chunk as Buffer)
        return [path, {path, sha256: hash.digest('hex'), size: (await stat(source)).size, source}] as const
      }),
    )
    const repo: FakeHubRepo = {commit: commit ?? createHash('sha1').update(id).digest('hex'), files: new Map(entries), id, token}
    this.repos.set(id, repo)
    return repo
  }

  /** The next `count` requests whose URL contains `matching` answer `status` (503: a hub briefly overloaded). */
  failNext(count: number, status = 503, matching = '') {
    this.failures.push({count, matching, status})
  }

  /** `file` is served with one byte changed, while the listing keeps its real SHA-256. */
  corruptFile(file: string) {
    this.corrupt.add(file)
  }

  /**
   * Transfers of `file` stop at byte `at` until `release()`, or lose their connection there on `drop()` (which
   * also lifts the hold, so the next transfer goes through); `reached` resolves once one has got there. Waiting
   * for the client to report those bytes before dropping makes "the connection broke after N bytes" exact,
   * which cutting a connection mid-stream is not: a client may discard what it had received but not yet read.
   */
  hold(file: string, at: number): {reached: Promise<void>; release(): void; drop(): void} {
    let release!: () => void
    let signalReached!: () => void
    const hold: Hold = {at, file, released: new Promise((resolve) => (release = resolve)), signalReached: () => signalReached(), waiting: new Set()}
    const reached = new Promise<void>((resolve) => (signalReached = resolve))
    this.holds.push(hold)
    const lift = () => {
      if (this.holds.includes(hold)) this.holds.splice(this.holds.indexOf(hold), 1)
    }

    return {
      drop() {
        lift()
        for (const response of hold.waiting) response.destroy()
      },
      reached,
      release() {
        lift()
        release()
      },
    }
  }

  /** Requests that sent bytes of `file` (any repo), or every file request. */
  fileRequests(file?: string): RecordedRequest[] {
    return this.requests.filter((request) => request.kind === 'file' && (!file || decodeURIComponent(request.url).includes(file)))
  }

  async stop(): Promise<void> {
    this.holds.length = 0
    for (const socket of this.sockets) socket.destroy()
    await new Promise((resolve) => this.server.close(resolve))
  }

  private record(request: IncomingMessage, kind: RecordedRequest['kind']) {
    this.requests.push({kind, method: request.method ?? 'GET', range: request.headers.range, url: request.url ?? '/'})
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const url = new URL(request.url ?? '/', this.url)
    const failure = this.failures.find((candidate) => decodeURIComponent(request.url ?? '').includes(candidate.matching))
    if (failure) {
      if (--failure.count === 0) this.failures.splice(this.failures.indexOf(failure), 1)
      this.record(request, 'other')
      return json(response, failure.status, {error: 'Service temporarily unavailable'})
    }

    let match: RegExpExecArray | null
    if ((match = /^\/api\/models\/(.+)\/revision\/([^/]+)$/.exec(url.pathname))) {
      this.record(request, 'listing')
      return this.huggingFaceListing(response, decodeURIComponent(match[1]), decodeURIComponent(match[2]))
    }

    if ((match = /^\/api\/models\/(.+)\/tree\/([^/]+)$/.exec(url.pathname))) {
      this.record(request, 'listing')
      return this.huggingFaceTree(response, decodeURIComponent(match[1]), decodeURIComponent(match[2]))
    }

    if (url.pathname === '/api/models') {
      this.record(request, 'listing')
      return this.huggingFaceSearch(response, url.searchParams)
    }

    if ((match = /^\/api\/models\/([^/]+\/[^/]+)$/.exec(url.pathname))) {
      this.record(request, 'listing')
      return this.huggingFaceListing(response, decodeURIComponent(match[1]), 'main')
    }

    if ((match = /^\/api\/v1\/models\/(.+)\/repo\/files$/.exec(url.pathname))) {
      this.record(request, 'listing')
      return this.modelScopeListing(response, decodeURIComponent(match[1]), url.searchParams.get('Revision') ?? 'master')
    }

    if ((match = /^\/api\/v1\/models\/(.+)\/repo$/.exec(url.pathname))) {
      this.record(request, 'file')
      const repo = this.repos.get(decodeURIComponent(match[1]))
      const file = repo?.files.get(url.searchParams.get('FilePath') ?? '')
      if (!repo || !file) return json(response, 404, {Code: 404, Message: 'file not found', Success: false})
      if (!this.authorized(request, repo)) return json(response, 401, {Code: 401, Message: 'unauthorized', Success: false})
      return this.send(request, response, file)
    }

    if ((match = /^\/(.+?\/.+?)\/resolve\/([^/]+)\/(.+)$/.exec(url.pathname))) {
      this.record(request, 'redirect')
      const repo = this.repos.get(decodeURIComponent(match[1]))
      if (!repo) return json(response, 401, {error: 'Repository not found'}, {'x-error-code': 'RepoNotFound'})
      if (!['main', repo.commit].includes(decodeURIComponent(match[2]))) return json(response, 404, {error: 'Revision not found'}, {'x-error-code': 'RevisionNotFound'})
      const file = repo.files.get(decodeURIComponent(match[3]))
      if (!file) return json(response, 404, {error: 'Entry not found'}, {'x-error-code': 'EntryNotFound'})
      if (!this.authorized(request, repo)) return json(response, 401, {error: `Access to model ${repo.id} is restricted.`}, {'x-error-code': 'GatedRepo'})
      response.writeHead(302, {location: `/cdn/${file.sha256}?repo=${encodeURIComponent(repo.id)}&file=${encodeURIComponent(file.path)}`}).end()
      return
    }

    if ((match = /^\/cdn\/([0-9a-f]{64})$/.exec(url.pathname))) {
      this.record(request, 'file')
      const file = this.repos.get(url.searchParams.get('repo') ?? '')?.files.get(url.searchParams.get('file') ?? '')
      if (!file || file.sha256 !== match[1]) return json(response, 404, {error: 'not found'})
      return this.send(request, response, file)
    }

    this.record(request, 'other')
    json(response, 404, {error: `no route ${url.pathname}`})
  }

  private huggingFaceListing(response: ServerResponse, id: string, revision: string) {
    const repo = this.repos.get(id)
    if (!repo) return json(response, 401, {error: 'Repository not found'}, {'x-error-code': 'RepoNotFound'})
    if (!['main', repo.commit].includes(revision)) return json(response, 404, {error: `Invalid rev id: ${revision}`}, {'x-error-code': 'RevisionNotFound'})
    json(response, 200, {
      id,
      sha: repo.commit,
      siblings: [...repo.files.values()].map((file) => ({
        blobId: file.sha256.slice(0, 40),
        lfs: {pointerSize: 134, sha256: file.sha256, size: file.size},
        rfilename: file.path,
        size: file.size,
      })),
    })
  }

  /** `tree/{revision}`: the files of the repo's top, each with its LFS object, as huggingface_hub's list_repo_tree reads them. */
  private huggingFaceTree(response: ServerResponse, id: string, revision: string) {
    const repo = this.repos.get(id)
    if (!repo) return json(response, 404, {error: 'Repository not found'}, {'x-error-code': 'RepoNotFound'})
    if (!['main', repo.commit].includes(revision)) return json(response, 404, {error: `Invalid rev id: ${revision}`}, {'x-error-code': 'RevisionNotFound'})
    json(
      response,
      200,
      [...repo.files.values()].map((file) => ({lfs: {oid: file.sha256, pointerSize: 134, size: file.size}, oid: file.sha256.slice(0, 40), path: file.path, size: file.size, type: 'file'})),
    )
  }

  /** The hub's search: repo ids containing every word of `search` (any case), most recently added first, `full=true` with their file names. */
  private huggingFaceSearch(response: ServerResponse, query: URLSearchParams) {
    const words = (query.get('search') ?? '').toLowerCase().split(/\s+/).filter(Boolean)
    const limit = Math.min(Number(query.get('limit') ?? 1000) || 1000, 1000)
    const found = [...this.repos.values()].filter((repo) => words.every((word) => repo.id.toLowerCase().includes(word))).slice(0, limit)
    json(
      response,
      200,
      found.map((repo) => ({
        _id: repo.commit.slice(0, 24),
        downloads: 0,
        id: repo.id,
        likes: 0,
        modelId: repo.id,
        private: false,
        tags: [...repo.files.keys()].some((path) => path.endsWith('.gguf')) ? ['gguf'] : [],
        ...(query.get('full') === 'true' ? {siblings: [...repo.files.keys()].map((rfilename) => ({rfilename}))} : {}),
      })),
    )
  }

  private modelScopeListing(response: ServerResponse, id: string, revision: string) {
    const repo = this.repos.get(id)
    if (!repo || revision !== 'master') return json(response, 404, {Code: 10010205001, Message: `model ${id} not exist`, Success: false})
    json(response, 200, {
      Code: 200,
      Data: {
        Files: [...repo.files.values()].map((file) => ({
          Name: file.path.split('/').at(-1),
          Path: file.path,
          Revision: repo.commit,
          Sha256: file.sha256,
          Size: file.size,
          Type: 'blob',
        })),
      },
      Success: true,
    })
  }

  private authorized(request: IncomingMessage, repo: FakeHubRepo): boolean {
    return !repo.token || request.headers.authorization === `Bearer ${repo.token}`
  }

  /** The file's bytes from the requested Range on, with the faults that apply to this file. */
  private async send(request: IncomingMessage, response: ServerResponse, file: FakeHubFile) {
    const range = /^bytes=(\d+)-(\d*)$/.exec(request.headers.range ?? '')
    const start = range ? Number(range[1]) : 0
    const end = range && range[2] ? Math.min(Number(range[2]), file.size - 1) : file.size - 1
    if (start >= file.size) {
      response.writeHead(416, {'content-range': `bytes */${file.size}`}).end()
      return
    }

    const headers: Record<string, string | number> = {'accept-ranges': 'bytes', 'content-length': end - start + 1, 'content-type': 'application/octet-stream'}
    if (range) headers['content-range'] = `bytes ${start}-${end}/${file.size}`
    response.writeHead(range ? 206 : 200, headers)
    const hold = this.holds.find((candidate) => candidate.file === file.path && candidate.at > start && candidate.at <= end)
    const corrupt = this.corrupt.has(file.path)
    let position = start
    for await (const chunk of createReadStream(file.source, {end, highWaterMark: 1 << 20, start})) {
      let bytes = chunk as Buffer
      if (hold && hold.at > position && hold.at < position + bytes.length) {
        await write(response, bytes.subarray(0, hold.at - position))
        bytes = bytes.subarray(hold.at - position)
        position = hold.at
        hold.waiting.add(response)
        hold.signalReached()
        await Promise.race([hold.released, new Promise((resolve) => response.once('close', resolve))])
        hold.waiting.delete(response)
        if (response.destroyed) return
      }

      if (corrupt && position <= Math.floor(file.size / 2) && Math.floor(file.size / 2) < position + bytes.length) {
        bytes = Buffer.from(bytes)
        bytes[Math.floor(file.size / 2) - position] ^= 0xff
      }

      if (!(await write(response, bytes))) return
      position += bytes.length
    }

    response.end()
  }
}

function json(response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
  response.writeHead(status, {'content-type': 'application/json', ...headers}).end(JSON.stringify(body))
}

/** Writes with backpressure; false once the client has gone. */
async function write(response: ServerResponse, bytes: Buffer): Promise<boolean> {
  if (response.destroyed) return false
  if (response.write(bytes)) return true
  await new Promise<void>((resolve) => {
    const done = () => {
      response.off('drain', done)
      response.off('close', done)
      resolve()
    }

    response.once('drain', done)
    response.once('close', done)
  })
  return !response.destroyed
}
