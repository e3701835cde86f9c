/**
 * The web interface's serving middleware on a folder made here (redirects, deep links, hashed assets, what it leaves
 * to the API, an unbuilt app), and the size budget of the app `npm run build` made: its JavaScript and CSS
 * together under 300 kB compressed.
 */
import {expect} from 'chai'
import {mkdir, readdir, readFile, writeFile} from 'node:fs/promises'
import {dirname, join, relative} from 'node:path'
import {gzipSync} from 'node:zlib'
import Koa from 'koa'

import {listen, type Listening} from '../../src/server/listen.js'
import {serveWebUi, WEB_UI_ROOT} from '../../src/server/web-ui.js'
import {ROOT, temporaryDirectory} from '../helpers/service.js'

const BUDGET_BYTES = 300_000

async function serve(root: string): Promise<Listening> {
  const app = new Koa()
  app.use(serveWebUi(root))
  app.use((ctx) => {
    ctx.body = {api: `${ctx.method} ${ctx.path}`}
  })
  return listen(app, {host: '127.0.0.1', port: 0})
}

describe('web interface serving', () => {
  let server: Listening
  before(async () => {
    const root = await temporaryDirectory()
    await mkdir(join(root, 'assets'))
    await writeFile(join(root, 'index.html'), '<!doctype html><title>app</title>')
    await writeFile(join(root, 'assets', 'index-abc123.js'), `console.log(${JSON.stringify('x'.repeat(4000))})`)
    await writeFile(join(root, 'robots.txt'), 'User-agent: *')
    server = await serve(root)
  })
  after(async () => server?.close())

  const get = (path: string, init: RequestInit = {}) => fetch(`${server.url}${path}`, {redirect: 'manual', ...init})

  it('redirects /, /ui and /v1/ui to /ui/', async () => {
    for (const path of ['/', '/ui', '/v1/ui']) {
      const response = await get(path)
      expect(response.status, path).to.equal(302)
      expect(response.headers.get('location')).to.equal('/ui/')
    }
  })

  it('answers a deep link (a uid with a dot included) with the app, revalidated on every load', async () => {
    for (const path of ['/ui/', '/ui/models', '/ui/playground/qwen2.5-instruct']) {
      const response = await get(path)
      expect(response.status, path).to.equal(200)
      expect(response.headers.get('cache-control')).to.equal('no-cache')
      expect(await response.text()).to.equal('<!doctype html><title>app</title>')
    }

    expect(await (await get('/ui/robots.txt')).text()).to.equal('User-agent: *')
  })

  it('serves hashed assets as immutable and compressed, and a missing one as 404', async () => {
    const response = await get('/ui/assets/index-abc123.js', {headers: {'accept-encoding': 'br'}})
    expect(response.headers.get('cache-control')).to.equal('max-age=31536000,immutable')
    expect(response.headers.get('content-encoding')).to.equal('br')
    expect(response.headers.get('content-type')).to.equal('text/javascript; charset=utf-8')
    expect((await get('/ui/assets/index-old.js')).status).to.equal(404)
  })

  it('leaves other paths and methods to the API', async () => {
    expect(await (await get('/v1/models')).json()).to.deep.equal({api: 'GET /v1/models'})
    expect(await (await get('/ui/x', {method: 'POST'})).json()).to.deep.equal({api: 'POST /ui/x'})
    expect(await (await get('/uix')).json()).to.deep.equal({api: 'GET /uix'})
  })

  it('says how to build the app when it is not built', async () => {
    const unbuilt = await serve(join(await temporaryDirectory(), 'missing'))
    try {
      const response = await fetch(`${unbuilt.url}/ui/`)
      expect(response.status).to.equal(503)
      expect(await response.text()).to.contain('run `npm run build`')
    } finally {
      await unbuilt.close()
    }
  })
})

describe('web interface imports', () => {
  it('reach the service only through the client library, the protocol types and the error vocabulary', async () => {
    const web = join(ROOT, 'web', 'src')
    const files = (await readdir(web, {recursive: true})).filter((name) => /\.tsx?$/.test(name))
    const reached = new Set<string>()
    for (const file of files)
      for (const [, target] of (await readFile(join(web, file), 'utf8')).matchAll(/from '((?:\.\.\/)+src\/[^']+)'/g)) reached.add(relative(ROOT, join(web, dirname(file), target)))
    expect([...reached].filter((target) => !/^src\/(client\/|protocol\/|kernel\/errors\.js$)/.test(target))).to.deep.equal([])
    expect(reached.has('src/client/client.js')).to.equal(true)
  })
})

describe('web interface size budget', () => {
  it(`keeps the built JavaScript and CSS under ${BUDGET_BYTES / 1000} kB gzip-compressed`, async () => {
    const assets = await readdir(join(WEB_UI_ROOT, 'assets')).catch(() => expect.fail(`${WEB_UI_ROOT} is missing: run \`npm run build\` first`))
    const code = assets.filter((name) => /\.(js|css)$/.test(name))
    expect(code).to.not.be.empty
    let total = 0
    for (const name of code) total += gzipSync(await readFile(join(WEB_UI_ROOT, 'assets', name)), {level: 9}).length
    expect(total).to.be.below(BUDGET_BYTES)
  })
})
