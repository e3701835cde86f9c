/**
 * The web interface: the single-page app `npm run build` makes from web/ into dist/web, served at /ui from the
 * package itself (no file from another host), with `/` redirecting to it. The app calls only the public HTTP API,
 * so its files are public too: with access control on, its login page asks for the credentials the API needs.
 */
import type Koa from 'koa'

import {send} from '@koa/send'
import compress from 'koa-compress'
import {existsSync} from 'node:fs'
import {fileURLToPath} from 'node:url'

/** The built app, from src/server or dist/server alike (both two folders below the package root). */
export const WEB_UI_ROOT = fileURLToPath(new URL('../../dist/web/', import.meta.url))
export const WEB_UI_PATH = '/ui'

/** Vite names every asset with a hash of its content: a changed file gets a new name, so a cached one never goes stale. */
const HASHED_ASSETS = `${WEB_UI_PATH}/assets/`
const YEAR_MS = 365 * 24 * 3600 * 1000
/**
 * The app's scripts, styles and fonts are its own files; images and sounds may also be ones it made in the page
 * (generated images as data: URLs, recordings and speech as blob: URLs); it calls only its own origin, and no
 * other site may frame it. A model's reply rendered as Markdown therefore cannot load anything from elsewhere.
 */
const CONTENT_SECURITY_POLICY =
  "default-src 'self'; img-src 'self' data: blob:; media-src 'self' data: blob:; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

/** The service's root, and /v1/ui for whoever appends /ui to the address an OpenAI client is given. */
const REDIRECTED = new Set(['/', WEB_UI_PATH, '/v1/ui'])

/** Whether the web interface answers this path (for GET and HEAD): its redirects, /ui and everything under it. */
export const isWebUiPath = (path: string) => REDIRECTED.has(path) || path.startsWith(`${WEB_UI_PATH}/`)

/**
 * Answers GET and HEAD of `/`, `/v1/ui`, `/ui` and everything under it; any other request goes on to the API. A path under
 * /ui that names no file gets the app's index.html, whose router shows the page (deep links work); index.html
 * itself is revalidated on every load, so a new build is picked up at once.
 */
export function serveWebUi(root = WEB_UI_ROOT): Koa.Middleware {
  // Gzip or Brotli, whichever the browser takes; koa-compress skips bodies under 1 kB and types that do not compress.
  const compressed = compress()
  const available = existsSync(root)
  return async (ctx, next) => {
    if ((ctx.method !== 'GET' && ctx.method !== 'HEAD') || !isWebUiPath(ctx.path)) return next()
    if (REDIRECTED.has(ctx.path)) {
      ctx.redirect(`${WEB_UI_PATH}/`)
      return
    }

    if (!available) {
      ctx.status = 503
      ctx.type = 'text/plain'
      ctx.body = `The web interface is not built: run \`npm run build\` (it writes ${root}).`
      return
    }

    ctx.set('Content-Security-Policy', CONTENT_SECURITY_POLICY)
    await compressed(ctx, async () => {
      const file = ctx.path.slice(WEB_UI_PATH.length)
      if (ctx.path.startsWith(HASHED_ASSETS)) {
        // send answers 404 itself for a missing asset: an old page asking for a file a new build replaced.
        await send(ctx, file, {brotli: false, gzip: false, immutable: true, maxage: YEAR_MS, root})
        return
      }

      const served = file !== '/' && /\.\w+$/.test(file) ? await send(ctx, file, {brotli: false, gzip: false, root}).catch(() => undefined) : undefined
      if (served) return
      ctx.set('Cache-Control', 'no-cache')
      await send(ctx, 'index.html', {brotli: false, gzip: false, root, setHeaders: (response) => response.setHeader('Cache-Control', 'no-cache')})
    })
  }
}
