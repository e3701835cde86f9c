/**
 * The weight store in-process against the local hub: what the end-to-end tests cannot set up cheaply, such
 * as a full disk, a hub that is briefly busy, or one of two launches sharing a download giving up.
 */
import {expect} from 'chai'
import {existsSync} from 'node:fs'
import {readdir} from 'node:fs/promises'
import {join} from 'node:path'

import type {ResolvedSpec} from '../../src/kernel/catalogue.js'

import {type DownloadFinished, ServiceEvents} from '../../src/kernel/observability.js'
import {WeightStore} from '../../src/weights/store.js'
import {FakeHub} from '../helpers/fake-hub.js'
import {writeRandomLlamaGguf} from '../../plugins/engine-llama-cpp/src/gguf/random-llama.js'
import {temporaryDirectory} from '../helpers/service.js'

const quiet = {debug() {}, error() {}, info() {}, warn() {}}

/** A fetch that fails as if the network were gone whenever `offline()` says so. */
const unlessOffline =
  (offline: () => boolean): typeof fetch =>
  async (input, init) =>
    offline() ? Promise.reject(Object.assign(new TypeError('fetch failed'), {cause: {code: 'ECONNRESET'}})) : fetch(input, init)

const spec = (quantization: string): ResolvedSpec => ({
  model_file_name_split_template: null,
  model_file_name_template: 'tiny-{quantization}.gguf',
  model_format: 'ggufv2',
  model_hub: 'huggingface',
  model_id: 'test-org/tiny-GGUF',
  model_revision: null,
  model_size_in_billions: '0_5',
  model_uri: null,
  quantization,
  quantization_parts: null,
})

describe('weight store', () => {
  let hub: FakeHub
  let size: number
  let directory: string

  before(async () => {
    directory = await temporaryDirectory()
    const tiny = join(directory, 'tiny.gguf')
    size = (await writeRandomLlamaGguf(tiny)).bytes
    hub = await FakeHub.start()
    await hub.addRepo('test-org/tiny-GGUF', {'tiny-a.gguf': tiny, 'tiny-b.gguf': tiny, 'tiny-c.gguf': tiny, 'tiny-d.gguf': tiny, 'tiny-e.gguf': tiny, 'tiny-f.gguf': tiny, 'tiny-g.gguf': tiny, 'tiny-h.gguf': tiny})
  })

  after(async () => hub?.stop())

  const store = (options: Partial<ConstructorParameters<typeof WeightStore>[0]> = {}) =>
    new WeightStore({cacheDir: join(directory, 'cache'), env: {HF_ENDPOINT: hub.url, SERVICE_DOWNLOAD_RETRY_DELAY_MS: '1'}, log: quiet, ...options})

  it('refuses a download the disk cannot hold before fetching anything, with the numbers', async () => {
    const error = await store({freeBytes: async () => 1000})
      .resolve({modelName: 'tiny', spec: spec('a')})
      .catch((e) => e)
    expect(error).to.include({code: 'insufficient_storage', status: 507})
    expect(error.message).to.equal(
      `not enough disk space to download tiny (tiny--0_5B--ggufv2--a): it needs ${(size / 1000).toFixed(1)} kB more, and 1.0 kB is free at ${join(directory, 'cache')}. Free some space (servicectl remove-cache) or set SERVICE_HOME to a larger disk.`,
    )
    expect(hub.fileRequests('tiny-a.gguf')).to.have.length(0)
    expect(existsSync(join(directory, 'cache', 'tiny--0_5B--ggufv2--a'))).to.equal(false)
  })

  it('keeps a shared download going while any launch follows it, and stops it with the last', async () => {
    const weights = store()
    const hold = hub.hold('tiny-b.gguf', 1000)
    const first = new AbortController()
    const second = new AbortController()
    const seen: number[] = []
    let received!: () => void
    const heldBytesArrived = new Promise<void>((resolve) => (received = resolve))
    const one = weights.resolve({modelName: 'tiny', spec: spec('b')}, {onProgress: (p) => p.downloadedBytes === 1000 && received(), signal: first.signal}).catch((e) => e)
    await heldBytesArrived
    let joined!: () => void
    const secondJoined = new Promise<void>((resolve) => (joined = resolve))
    const two = weights.resolve({modelName: 'tiny', spec: spec('b')}, {onProgress: (p) => (seen.push(p.downloadedBytes), joined()), signal: second.signal}).catch((e) => e)
    await secondJoined
    first.abort()
    expect(await one).to.include({code: 'request_aborted', status: 499})
    expect(weights.downloading('tiny--0_5B--ggufv2--b')).to.equal(true)
    second.abort()
    expect(await two).to.include({code: 'request_aborted'})
    expect(seen).to.deep.equal([1000])
    expect(weights.downloading('tiny--0_5B--ggufv2--b')).to.equal(false)
    expect(existsSync(join(directory, 'cache', 'tiny--0_5B--ggufv2--b'))).to.equal(false)
    hold.release()
  })

  it('downloads anew for a launch that arrives as the last launch following a download cancels it, not sharing its cancel', async () => {
    const weights = store()
    const hold = hub.hold('tiny-h.gguf', 1000)
    const first = new AbortController()
    let received!: () => void
    const heldBytesArrived = new Promise<void>((resolve) => (received = resolve))
    const one = weights.resolve({modelName: 'tiny', spec: spec('h')}, {onProgress: (p) => p.downloadedBytes === 1000 && received(), signal: first.signal}).catch((e) => e)
    await heldBytesArrived
    first.abort()
    hold.release()
    // In the same turn as the cancel, while that download winds down.
    const again = weights.resolve({modelName: 'tiny', spec: spec('h')})
    expect(await one).to.include({code: 'request_aborted', status: 499})
    expect(await again).to.equal(join(directory, 'cache', 'tiny--0_5B--ggufv2--h', 'tiny-h.gguf'))
  })

  it('fails a file larger than the hub lists at once, keeping nothing, instead of downloading it again and again', async () => {
    let served = 0
    const padded: typeof fetch = async (input, init) => {
      const response = await fetch(input, init)
      if (!String(input).includes('/resolve/')) return response
      served++
      return new Response(Buffer.concat([Buffer.from(await response.arrayBuffer()), Buffer.from('an error page appended')]), {status: 200})
    }

    const error = await store({fetch: padded})
      .resolve({modelName: 'tiny', spec: spec('g')})
      .catch((e) => e)
    expect(error).to.include({code: 'download_corrupt', status: 502})
    expect(error.message).to.match(new RegExp(`is larger than the ${size} bytes huggingface lists`))
    expect(served, 'one download, not a retry after another').to.equal(1)
    expect(existsSync(join(directory, 'cache', 'tiny--0_5B--ggufv2--g', 'tiny-g.gguf.part'))).to.equal(false)
  })

  it('keeps what it received when the hub stays unreachable, and resumes from there next time', async () => {
    const hold = hub.hold('tiny-c.gguf', 1000)
    let offline = false
    // Once the connection drops, every request fails as if the network were gone.
    const flaky = unlessOffline(() => offline)
    const failed = store({env: {HF_ENDPOINT: hub.url, SERVICE_DOWNLOAD_MAX_ATTEMPTS: '3', SERVICE_DOWNLOAD_RETRY_DELAY_MS: '1'}, fetch: flaky})
      .resolve({modelName: 'tiny', spec: spec('c')}, {onProgress: ({downloadedBytes}) => downloadedBytes === 1000 && ((offline = true), hold.drop())})
      .catch((e) => e)
    const error = await failed
    expect(error.code).to.equal('download_failed')
    expect(error.message).to.match(/^downloading tiny-c.gguf from http:\/\/127.0.0.1:\d+\/\S+ failed 3 times in a row \(ECONNRESET\); the 1\.0 kB received so far are kept in \S+tiny-c.gguf.part, and launching again resumes from there\.$/)
    const folder = join(directory, 'cache', 'tiny--0_5B--ggufv2--c')
    expect(await readdir(folder)).to.deep.equal(['tiny-c.gguf.part'])

    const path = await store().resolve({modelName: 'tiny', spec: spec('c')})
    expect(path).to.equal(join(folder, 'tiny-c.gguf'))
    expect(hub.fileRequests('tiny-c.gguf').at(-1)?.range).to.equal('bytes=1000-')
  })

  it('reports each download on the service events with the bytes it fetched, a resumed one only its rest, and how it ended', async () => {
    const events = new ServiceEvents()
    const reported: DownloadFinished[] = []
    events.on('download', (event) => reported.push(event))
    const dropped = hub.hold('tiny-e.gguf', 1000)
    let offline = false
    const failed = await store({env: {HF_ENDPOINT: hub.url, SERVICE_DOWNLOAD_MAX_ATTEMPTS: '1'}, events, fetch: unlessOffline(() => offline)})
      .resolve({modelName: 'tiny', spec: spec('e')}, {onProgress: ({downloadedBytes}) => downloadedBytes === 1000 && ((offline = true), dropped.drop())})
      .catch((e) => e)
    expect(failed.code).to.equal('download_failed')
    await store({events}).resolve({modelName: 'tiny', spec: spec('e')})

    const held = hub.hold('tiny-f.gguf', 1000)
    const launch = new AbortController()
    const cancelled = await store({events})
      .resolve({modelName: 'tiny', spec: spec('f')}, {onProgress: ({downloadedBytes}) => downloadedBytes === 1000 && launch.abort(), signal: launch.signal})
      .catch((e) => e)
    held.release()
    expect(cancelled.code).to.equal('request_aborted')

    expect(reported.map(({bytes, hub, modelName, outcome}) => ({bytes, hub, modelName, outcome}))).to.deep.equal([
      {bytes: 1000, hub: 'huggingface', modelName: 'tiny', outcome: 'failed'},
      {bytes: size - 1000, hub: 'huggingface', modelName: 'tiny', outcome: 'completed'},
      {bytes: 1000, hub: 'huggingface', modelName: 'tiny', outcome: 'cancelled'},
    ])
    expect(reported[0].reason).to.equal(failed.message)
  })

  it('retries a hub that answers 503 for a while, on the file list and on the file', async () => {
    hub.failNext(2)
    const listing = await store().locate({modelName: 'tiny', spec: spec('d')})
    expect(listing.source).to.equal('huggingface')
    hub.failNext(2, 502, '/resolve/')
    const path = await store().resolve({modelName: 'tiny', spec: spec('d')})
    expect(path).to.equal(join(directory, 'cache', 'tiny--0_5B--ggufv2--d', 'tiny-d.gguf'))
    expect(hub.requests.filter((r) => r.url.includes('tiny-d.gguf')).map((r) => r.kind)).to.deep.equal(['other', 'other', 'redirect', 'file'])
  })
})
