/**
 * The API reference: an OpenAPI 3.1 document built from the route schemas (`/openapi.json`) and a
 * self-contained HTML page rendering it (`/docs`). The page loads nothing from the network, so it works
 * on machines without internet access.
 */
import type {RouteDefinition} from '../../kernel/contracts.js'

import {PUBLIC, requiredPermission} from '../../kernel/permissions.js'
import {multipartSchema} from '../multipart.js'

const openApiPath = (path: string) => path.replaceAll(/:(\w+)/g, '{$1}')
const bodyTypes = (definition: RouteDefinition) => (definition.acceptsForm ? ['application/json', 'application/x-www-form-urlencoded'] : ['application/json'])

export function openApiDocument(routes: Array<{definition: RouteDefinition; plugin: string}>, version: string) {
  const paths: Record<string, Record<string, unknown>> = {}
  for (const {definition, plugin} of routes) {
    const path = openApiPath(definition.path)
    const parameters = [...definition.path.matchAll(/:(\w+)/g)].map(([, name]) => ({in: 'path', name, required: true, schema: {type: 'string'}}))
    paths[path] ??= {}
    paths[path][definition.method.toLowerCase()] = {
      parameters: parameters.length > 0 ? parameters : undefined,
      requestBody: definition.multipart
        ? {content: {'multipart/form-data': {schema: multipartSchema(definition)}}, required: true}
        : definition.body
          ? {content: Object.fromEntries(bodyTypes(definition).map((type) => [type, {schema: definition.body!.json}])), required: true}
          : undefined,
      responses: {
        200: {content: {'application/json': {schema: definition.response ?? {}}}, description: 'Success'},
        default: {description: 'An error in the OpenAI envelope {error: {message, type, param, code}} (Anthropic shape under /anthropic)'},
      },
      summary: definition.summary,
      tags: [definition.tag ?? plugin],
      'x-permission': requiredPermission(definition),
      'x-plugin': plugin,
    }
  }

  return {info: {description: 'OpenAI- and Anthropic-compatible model serving.', title: 'service-toolkit API', version}, openapi: '3.1.0', paths}
}

const escape = (text: string) => text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;')

export function docsPage(document: ReturnType<typeof openApiDocument>): string {
  const rows = Object.entries(document.paths)
    .flatMap(([path, methods]) =>
      Object.entries(methods).map(([method, operation]) => {
        const op = operation as {summary: string; requestBody?: {content: Record<string, {schema: unknown}>}; 'x-permission': string}
        const [type, body] = Object.entries(op.requestBody?.content ?? {})[0] ?? []
        const schema = body ? `<details><summary>request body${type === 'application/json' ? '' : ` (${escape(type)})`}</summary><pre>${escape(JSON.stringify(body.schema, null, 2))}</pre></details>` : ''
        return `<section><h3><span class="m ${method}">${method.toUpperCase()}</span> <code>${escape(path)}</code></h3><p>${escape(op.summary)} <small>permission: ${escape(op['x-permission'])}</small></p>${schema}</section>`
      }),
    )
    .join('\n')
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escape(document.info.title)}</title>
<style>body{font:15px system-ui,sans-serif;max-width:960px;margin:2em auto;padding:0 1em;color:#222}h3{font-size:15px;margin:.2em 0}section{border-bottom:1px solid #ddd;padding:.6em 0}
.m{display:inline-block;min-width:4.5em;font-size:12px;padding:2px 6px;border-radius:3px;color:#fff;background:#555}.get{background:#2b7bb9}.post{background:#2e9a52}.delete{background:#c0392b}.put{background:#b9770e}
pre{background:#f6f6f6;padding:.6em;overflow:auto;font-size:12px}small{color:#777}</style></head>
<body><h1>${escape(document.info.title)} <small>${escape(document.info.version)}</small></h1><p>Machine-readable: <a href="/openapi.json">/openapi.json</a>. OpenAI clients use <code>/v1</code> as base URL; Anthropic clients use <code>/anthropic</code>.</p>
${rows}</body></html>`
}

export function docsRoutes(document: () => ReturnType<typeof openApiDocument>): RouteDefinition[] {
  return [
    {
      async handler() {
        return {body: document(), kind: 'json'}
      },
      method: 'GET',
      path: '/openapi.json',
      permission: PUBLIC,
      summary: 'OpenAPI document of every route',
      tag: 'service',
    },
    {
      async handler() {
        return {body: docsPage(document()), headers: {'Content-Type': 'text/html; charset=utf-8'}, kind: 'json'}
      },
      method: 'GET',
      path: '/docs',
      permission: PUBLIC,
      summary: 'API reference page',
      tag: 'service',
    },
  ]
}
