/**
 * Calls a real service and checks each answer against what its own /openapi.json declares for that route and status:
 * the JSON body, each server-sent event's data (`x-itemSchema`), the text of other media types, and error replies
 * (the `default` response). It remembers what it checked, so a test can fail on a route it never called, and keeps
 * one answer and request body per route for the typed client's compile check.
 */
import {Ajv2020, type ValidateFunction} from 'ajv/dist/2020.js'
import {expect} from 'chai'
import {createParser} from 'eventsource-parser'

type Schema = Record<string, unknown>
interface Media {
  schema: Schema
  'x-itemSchema'?: Schema
}
interface Reply {
  $ref?: string
  content?: Record<string, Media>
}
export interface OpenApiOperation {
  operationId: string
  parameters?: Array<{in: string; name: string; required: boolean; schema: Schema}>
  requestBody?: {content: Record<string, Media>}
  responses: Record<string, Reply>
  security?: Array<Record<string, string[]>>
  'x-permission': string
}
export interface OpenApiDocument {
  components: {responses: Record<string, Reply>; securitySchemes: Record<string, Schema>}
  paths: Record<string, Record<string, OpenApiOperation>>
}

export interface CallOptions {
  params?: Record<string, string>
  query?: Record<string, string>
  body?: unknown
  headers?: Record<string, string>
}

export interface Checked {
  status: number
  body: any
  /** The data of each server-sent event, parsed, for a streamed answer. */
  events?: any[]
}

/** `GET /v1/models` → the key the checker files its calls under. */
export const operationKey = (method: string, path: string) => `${method.toUpperCase()} ${path}`

export class OpenApiChecker {
  /** Statuses checked per operation. */
  readonly answered = new Map<string, Set<number>>()
  /** The first JSON success of each operation, with the body that was sent. */
  readonly samples = new Map<string, {reply: unknown; request?: unknown}>()
  /** The events of the first stream of each operation that streams, and its first error reply. */
  readonly streams = new Map<string, unknown[]>()
  readonly errors = new Map<string, unknown>()
  private readonly ajv = new Ajv2020({allErrors: true, strict: false, validateFormats: false})
  private readonly compiled = new WeakMap<Schema, ValidateFunction>()

  constructor(readonly document: OpenApiDocument) {}

  /** Calls `method path` (path as the document writes it, `{model_uid}` filled from `params`) and checks the answer. */
  async call(service: {url: string}, method: string, path: string, options: CallOptions = {}): Promise<Checked> {
    const operation = this.document.paths[path]?.[method.toLowerCase()]
    expect(operation, `${operationKey(method, path)} is in the document`).to.not.equal(undefined)
    const url = new URL(path.replaceAll(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(options.params?.[name] ?? '')), service.url)
    for (const [name, value] of Object.entries(options.query ?? {})) url.searchParams.set(name, value)
    const response = await fetch(url, {
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
      headers: {...(options.body === undefined ? {} : {'content-type': 'application/json'}), ...options.headers},
      method,
    })
    const type = (response.headers.get('content-type') ?? '').split(';')[0].trim()
    const text = await response.text()
    const what = `${operationKey(method, path)} answering ${response.status} (${type})`
    const media = this.declared(operation!, response.status)?.content?.[type]
    expect(media, `${what}: the document declares this media type for this status`).to.not.equal(undefined)
    let body: unknown = text
    let events: unknown[] | undefined
    if (type === 'text/event-stream') {
      expect(media!['x-itemSchema'], `${what}: the events' schema`).to.not.equal(undefined)
      events = eventsOf(text)
      expect(events, `${what}: events`).to.not.have.length(0)
      for (const [index, event] of events.entries()) this.check(media!['x-itemSchema']!, event, `${what}, event ${index}`)
    } else {
      if (type === 'application/json') body = JSON.parse(text)
      this.check(media!.schema, body, what)
    }

    const key = operationKey(method, path)
    this.answered.set(key, new Set([...(this.answered.get(key) ?? []), response.status]))
    if (response.status === 200 && type === 'application/json' && !this.samples.has(key)) this.samples.set(key, {reply: body, request: options.body})
    if (events && !this.streams.has(key)) this.streams.set(key, events)
    if (response.status >= 400 && !this.errors.has(key)) this.errors.set(key, body)
    return {body, events, status: response.status}
  }

  /** Every operation of the document, as `METHOD path`. */
  operations(): string[] {
    return Object.entries(this.document.paths).flatMap(([path, methods]) => Object.keys(methods).map((method) => operationKey(method, path)))
  }

  private declared(operation: OpenApiOperation, status: number): Reply | undefined {
    const reply = operation.responses[String(status)] ?? operation.responses.default
    if (!reply?.$ref) return reply
    return this.document.components.responses[reply.$ref.replace('#/components/responses/', '')]
  }

  private check(schema: Schema, value: unknown, what: string): void {
    let validate = this.compiled.get(schema)
    if (!validate) this.compiled.set(schema, (validate = this.ajv.compile(schema)))
    if (!validate(value)) expect.fail(`${what} does not match the document:\n${JSON.stringify(validate.errors, null, 2)}\nvalue: ${JSON.stringify(value).slice(0, 2000)}`)
  }
}

/** The JSON data of each server-sent event; OpenAI's closing `[DONE]` is not an event. */
function eventsOf(text: string): unknown[] {
  const events: unknown[] = []
  const parser = createParser({
    onEvent(event) {
      if (event.data !== '[DONE]') events.push(JSON.parse(event.data))
    },
  })
  parser.feed(text)
  return events
}
