/**
 * The OpenAPI 3.1 document of every route (`/openapi.json`), built from the routes' own schemas: each route's request
 * body, query parameters, response, stream events and permission are what it declares in its RouteDefinition, so the
 * document cannot drift from what validates the requests.
 */
import type {JsonSchema} from '../kernel/schema.js'
import type {RouteDefinition} from '../kernel/contracts.js'

import {CLUSTER, PUBLIC, requiredPermission} from '../kernel/permissions.js'
import {anthropicErrorSchema, ollamaErrorSchema, openAiErrorSchema} from '../protocol/errors.js'
import {ANTHROPIC_PREFIX, OLLAMA_PREFIX} from './access.js'
import {multipartSchema} from './multipart.js'

type Routes = Array<{definition: RouteDefinition; plugin: string}>

const PATH_PARAMETERS: Record<string, string> = {
  model_id: 'Uid of a running chat model.',
  model_name: 'Name of a model in the catalogue or registered.',
  model_type: 'Model type: LLM, embedding, rerank, or one a plugin adds.',
  model_uid: 'Uid of a model, running or launching.',
}

/** Who may call what, when access control is on (`--auth-config`); with it off every route is open. */
const SECURITY_SCHEMES = {
  apiKey: {description: 'An API key in `x-api-key`, as Anthropic clients send it (routes under /anthropic).', in: 'header', name: 'x-api-key', type: 'apiKey'},
  bearer: {
    description: 'An API key or an access token from POST /token, as `Authorization: Bearer <credential>`; the cluster token on the routes workers call.',
    scheme: 'bearer',
    type: 'http',
  },
  login: {
    description: 'A username and password exchanged for an access token at POST /token (OAuth2 password grant).',
    flows: {password: {scopes: {}, tokenUrl: '/token'}},
    type: 'oauth2',
  },
}

const openApiPath = (path: string) => path.replaceAll(/:(\w+)/g, '{$1}')
const bodyTypes = (definition: RouteDefinition) => (definition.acceptsForm ? ['application/json', 'application/x-www-form-urlencoded'] : ['application/json'])
const styleOf = (definition: RouteDefinition) => definition.errorStyle ?? (definition.path.startsWith(ANTHROPIC_PREFIX) ? 'anthropic' : definition.path.startsWith(OLLAMA_PREFIX) ? 'ollama' : 'openai')
const isAnthropic = (definition: RouteDefinition) => styleOf(definition) === 'anthropic'
const ERROR_RESPONSES = {anthropic: '#/components/responses/AnthropicError', ollama: '#/components/responses/OllamaError', openai: '#/components/responses/Error'}

/** `GET /v1/models/:model_uid/progress` → `getV1ModelsByModelUidProgress`: unique, stable, and readable as a method name. */
function operationId(definition: RouteDefinition): string {
  const words = definition.path
    .split('/')
    .filter(Boolean)
    .map((segment) => (segment.startsWith(':') ? `by_${segment.slice(1)}` : segment))
    .flatMap((segment) => segment.split(/[^A-Za-z0-9]+/))
    .filter(Boolean)
  return definition.method.toLowerCase() + words.map((word) => word[0].toUpperCase() + word.slice(1)).join('')
}

function security(definition: RouteDefinition) {
  const permission = requiredPermission(definition)
  if (permission === PUBLIC) return undefined
  if (permission === CLUSTER) return [{bearer: []}]
  return isAnthropic(definition) ? [{apiKey: []}, {bearer: []}, {login: []}] : [{bearer: []}, {login: []}]
}

function parameters(definition: RouteDefinition) {
  const {params, query} = definition.example ?? {}
  const inPath = [...definition.path.matchAll(/:(\w+)/g)].map(([, name]) => ({
    description: PATH_PARAMETERS[name],
    example: params?.[name],
    in: 'path',
    name,
    required: true,
    schema: {type: 'string'},
  }))
  const inQuery = Object.entries(definition.query ?? {}).map(([name, {description, required, schema}]) => ({description, example: query?.[name], in: 'query', name, required: required === true, schema}))
  const all = [...inPath, ...inQuery]
  return all.length > 0 ? all : undefined
}

/**
 * The example body goes on the media type, where swagger-ui takes a JSON body from. swagger-ui fills a form's fields from
 * each property's own `example` instead, else from a value it makes up ("string", the first of an enum) and sends them
 * all: a multipart route's text fields carry the example's value, or '' for a field the example leaves out, which the
 * route takes as not given (multipart.ts).
 */
function requestBody(definition: RouteDefinition) {
  const example = definition.example?.body
  if (definition.multipart) {
    const schema = multipartSchema(definition) as {properties: Record<string, JsonSchema>}
    const values = (example ?? {}) as Record<string, unknown>
    const textFields = Object.keys((definition.body?.json.properties ?? {}) as JsonSchema)
    for (const name of textFields) schema.properties[name] = {...schema.properties[name], example: values[name] ?? ''}
    return {content: {'multipart/form-data': {example, schema}}, required: true}
  }

  if (!definition.body) return undefined
  return {content: Object.fromEntries(bodyTypes(definition).map((type) => [type, {example, schema: definition.body!.json}])), required: true}
}

function success(definition: RouteDefinition) {
  // `response` describes the JSON answer when the route also answers JSON, else what it produces (text, a file).
  const types = definition.produces ? [definition.produces].flat() : ['application/json']
  const answersJson = types.includes('application/json')
  const schemaOf = (type: string) => (type === 'application/json' ? (definition.response ?? {}) : answersJson ? {type: 'string'} : (definition.response ?? {type: 'string'}))
  const content: Record<string, unknown> = Object.fromEntries(types.map((type) => [type, {schema: schemaOf(type)}]))
  if (definition.events)
    content['text/event-stream'] = {
      schema: {description: 'Server-sent events, when the request asks to stream: each `data:` is one JSON event as `x-itemSchema` describes.', type: 'string'},
      'x-itemSchema': definition.events,
    }
  return {content, description: definition.events ? 'The answer, or its stream of events when the request sets `stream`.' : 'Success'}
}

function operation(definition: RouteDefinition, plugin: string) {
  return {
    operationId: operationId(definition),
    parameters: parameters(definition),
    requestBody: requestBody(definition),
    responses: {
      200: success(definition),
      default: {$ref: ERROR_RESPONSES[styleOf(definition)]},
    },
    security: security(definition),
    summary: definition.summary,
    tags: [definition.tag ?? plugin],
    'x-permission': requiredPermission(definition),
    'x-plugin': plugin,
  }
}

export function openApiDocument(routes: Routes, version: string) {
  const paths: Record<string, Record<string, unknown>> = {}
  for (const {definition, plugin} of routes) {
    paths[openApiPath(definition.path)] ??= {}
    paths[openApiPath(definition.path)][definition.method.toLowerCase()] = operation(definition, plugin)
  }

  const errorResponse = (description: string, schema: JsonSchema) => ({content: {'application/json': {schema}}, description})
  const responses = {
    AnthropicError: errorResponse('An error in Anthropic\'s shape: {type: "error", error: {type, message}}.', anthropicErrorSchema.json),
    Error: errorResponse('An error in the OpenAI envelope: {error: {message, type, param, code}}.', openAiErrorSchema.json),
    OllamaError: errorResponse('An error in Ollama\'s shape: {error: message}.', ollamaErrorSchema.json),
  }
  const tags = [...new Set(routes.map(({definition, plugin}) => definition.tag ?? plugin))].map((name) => ({name}))
  return {
    components: {responses, securitySchemes: SECURITY_SCHEMES},
    info: {
      description:
        'OpenAI- and Anthropic-compatible model serving. OpenAI clients use `/v1` as their base URL, Anthropic clients `/anthropic`. ' +
        "With access control on (`--auth-config`), a route needs the credentials its `security` names and the permission its `x-permission` names; with it off, every route is open.",
      title: 'service-toolkit API',
      version,
    },
    openapi: '3.1.0',
    paths,
    tags,
  }
}
