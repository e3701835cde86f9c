/**
 * The API reference: the OpenAPI document of every route (`/openapi.json`, see ../openapi.ts) and `/docs`, an
 * interactive page rendering it with Swagger UI, whose script and styles come inlined from the installed
 * `swagger-ui-dist` package: the page loads nothing from any other host, so it works on machines without internet
 * access, and "Try it out" calls this service.
 */
import type {RouteDefinition} from '../../kernel/contracts.js'
import type {openApiDocument} from '../openapi.js'

import {createHash} from 'node:crypto'
import {readFile} from 'node:fs/promises'
import {createRequire} from 'node:module'
import {dirname, join} from 'node:path'

import {PUBLIC} from '../../kernel/permissions.js'

type OpenApiDocument = ReturnType<typeof openApiDocument>

const escape = (text: string) => text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;')
const SWAGGER_UI = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'))

/**
 * A file of swagger-ui-dist, ready to inline: without its source map comment, which would send devtools to fetch a
 * file this page does not serve, and with no `</script` or `</style` that would end its element early.
 */
async function swaggerUiFile(name: string): Promise<string> {
  return (await readFile(join(SWAGGER_UI, name), 'utf8')).replaceAll(/\/[/*]# sourceMappingURL=\S+/g, '').replaceAll(/<\/(script|style)/gi, '<\\/$1')
}

/** Every operation as a line of plain HTML, for a reader without JavaScript. */
function operationList(document: OpenApiDocument): string {
  return Object.entries(document.paths)
    .flatMap(([path, methods]) =>
      Object.entries(methods).map(([method, operation]) => {
        const op = operation as {summary: string; requestBody?: {content: Record<string, {schema: unknown}>}; 'x-permission': string}
        const [type] = Object.keys(op.requestBody?.content ?? {})
        const body = type ? ` request body${type === 'application/json' ? '' : ` (${escape(type)})`}.` : ''
        return `<li><b>${method.toUpperCase()}</b> <code>${escape(path)}</code>: ${escape(op.summary)}.${body} Permission: ${escape(op['x-permission'])}.</li>`
      }),
    )
    .join('\n')
}

/**
 * Swagger UI's own settings: the document from this service (relative, so a path prefix of a proxy still works), no
 * validator badge (it would call validator.swagger.io), and credentials forgotten with the page: kept, they would
 * sit in localStorage, where any script of this origin, and anyone at the browser after the reader, finds them.
 */
const SETTINGS = {deepLinking: true, displayOperationId: true, dom_id: '#swagger-ui', persistAuthorization: false, url: 'openapi.json', validatorUrl: null}
const START = `window.ui = SwaggerUIBundle(${JSON.stringify(SETTINGS)})`

const sha256 = (text: string) => `'sha256-${createHash('sha256').update(text).digest('base64')}'`

/**
 * The page runs its own two scripts and style sheet, named by their hashes, and nothing else: no script a
 * document's description could slip in, no other host, and no other site's frame around it.
 */
const contentSecurityPolicy = (script: string, styles: string) =>
  `default-src 'none'; script-src ${sha256(script)} ${sha256(START)}; style-src ${sha256(styles)}; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`

/** Swagger UI's files do not change while the service runs: their hashes are taken once, by the first /docs request. */
let policy: string | undefined

export async function docsPage(document: OpenApiDocument): Promise<{html: string; contentSecurityPolicy: string}> {
  const [script, styles] = await Promise.all([swaggerUiFile('swagger-ui-bundle.js'), swaggerUiFile('swagger-ui.css')])
  policy ??= contentSecurityPolicy(script, styles)
  const html = `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escape(document.info.title)} ${escape(document.info.version)}</title><link rel="icon" href="data:,"><style>${styles}</style></head>
<body><div id="swagger-ui"></div>
<noscript><h1>${escape(document.info.title)} ${escape(document.info.version)}</h1><p>Machine-readable: <a href="openapi.json">/openapi.json</a>.</p><ul>${operationList(document)}</ul></noscript>
<script>${script}</script>
<script>${START}</script></body></html>`
  return {contentSecurityPolicy: policy, html}
}

export function docsRoutes(document: () => OpenApiDocument): RouteDefinition[] {
  return [
    {
      async handler() {
        return {body: document(), kind: 'json'}
      },
      method: 'GET',
      path: '/openapi.json',
      permission: PUBLIC,
      response: {
        additionalProperties: true,
        description: 'An OpenAPI 3.1 document.',
        properties: {info: {additionalProperties: true, type: 'object'}, openapi: {const: '3.1.0'}, paths: {additionalProperties: true, type: 'object'}},
        required: ['openapi', 'info', 'paths'],
        type: 'object',
      },
      summary: 'OpenAPI document of every route',
      tag: 'service',
    },
    {
      async handler() {
        const {contentSecurityPolicy, html} = await docsPage(document())
        return {body: html, headers: {'Content-Security-Policy': contentSecurityPolicy, 'Content-Type': 'text/html; charset=utf-8'}, kind: 'json'}
      },
      method: 'GET',
      path: '/docs',
      permission: PUBLIC,
      produces: 'text/html',
      summary: 'Interactive API reference (Swagger UI): every route, its schemas, and "Try it out" against this service',
      tag: 'service',
    },
  ]
}
