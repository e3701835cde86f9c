/**
 * Stored responses: kept under SERVICE_HOME (the kernel's record store: private files, bounded, the oldest dropped),
 * each with the conversation it answered and the user who asked for it, whom alone (and admins) it is shown to; a
 * response of anyone else is answered as one that does not exist. Background responses run here until they end or
 * are cancelled, and are read as they are while they run.
 */
import type {Authority, KernelApi, RouteDefinition} from 'service-toolkit'

import type {StoredItem} from './responses-input.js'
import type {ResponseObject, StreamEvent} from './responses-run.js'
import type {responsesSchemas} from './responses-shapes.js'

/** Enough for a team's conversations; each response with its conversation is at most a few MiB (responses.ts). */
const STORE_BOUNDS = {maxBytes: 512 * 1024 * 1024, maxCount: 10_000}
/** Background responses running at once; each waits its turn at the engine, so more would only hold memory. */
const MAX_RUNNING = 256

export interface StoredResponse {
  response: ResponseObject
  /** Every input item the response answered: those of the conversation it continued, then its request's. */
  context: StoredItem[]
  owner: string | null
}

interface Running {
  record: StoredResponse
  controller: AbortController
  finished: Promise<void>
}

export class ResponseLibrary {
  private readonly store
  private readonly running = new Map<string, Running>()

  constructor(private readonly api: KernelApi) {
    this.store = api.records('responses', STORE_BOUNDS)
  }

  async save(record: StoredResponse): Promise<void> {
    try {
      await this.store.put(record.response.id, record)
    } catch (error) {
      // The answer is given all the same; only its continuation and GET are lost.
      this.api.log.warn(`response ${record.response.id} was not stored: ${(error as Error).message}`)
    }
  }

  /** The response, if it exists and the caller may see it: what created it, or an admin. */
  async find(id: string, authority: Authority): Promise<StoredResponse | undefined> {
    const running = this.running.get(id)?.record
    const record = running ?? ((await this.store.get(id)) as StoredResponse | undefined)
    if (!record || !(authority.admin || record.owner === authority.username)) return undefined
    if (running || record.response.status !== 'in_progress') return record
    const error = {code: 'shutting_down', message: 'the service stopped while this background response ran; create it again.'}
    return {...record, response: {...record.response, error, status: 'failed'}}
  }

  async found(id: string, authority: Authority, param?: string): Promise<StoredResponse> {
    const record = await this.find(id, authority)
    if (record) return record
    const why = `no stored response ${id}: it was made with store false, deleted, dropped as the oldest, or is another user's.`
    throw param ? this.api.errors.create(404, 'not_found', `\`${param}\`: ${why}`, param) : this.api.errors.notFound(why)
  }

  /** The items a response continuing `id` starts from: its conversation and its answer, reasoning left out as chat templates leave it. */
  async conversation(id: string, authority: Authority): Promise<StoredItem[]> {
    const {context, response} = await this.found(id, authority, 'previous_response_id')
    if (response.status === 'in_progress')
      throw this.api.errors.create(409, 'conflict', `\`previous_response_id\`: response ${id} is still in progress; continue it once it has ended.`, 'previous_response_id')
    return [...context, ...response.output.filter((item) => item.type !== 'reasoning')]
  }

  checkRoomToRun(): void {
    if (this.running.size >= MAX_RUNNING)
      throw this.api.errors.create(429, 'overloaded', `${MAX_RUNNING} background responses are running; wait for some to end, or cancel them.`, 'background')
  }

  /**
   * Runs the response on, stored as it begins and again as it ends (completed, cancelled, failed). It is among the
   * running ones from before its first store until after its last, so a stored one in progress that is not running
   * is one a stopped service left.
   */
  async runInBackground(record: StoredResponse, run: AsyncGenerator<StreamEvent>, controller: AbortController): Promise<void> {
    const {response} = record
    let finish!: () => void
    this.running.set(response.id, {controller, finished: new Promise((resolve) => (finish = resolve)), record})
    await this.save(record)
    void (async () => {
      try {
        for await (const _ of run);
      } catch (error) {
        if (!controller.signal.aborted) {
          response.status = 'failed'
          // The service's own code for what went wrong (model_crashed, generation_failed…), as its HTTP errors carry.
          response.error = {code: (error as {code?: string}).code ?? 'internal_error', message: (error as Error).message}
        }
      }

      if (controller.signal.aborted && response.status === 'in_progress') response.status = 'cancelled'
      await this.save(record)
      this.running.delete(response.id)
      finish()
    })()
  }

  async cancel(id: string, authority: Authority): Promise<ResponseObject> {
    const {response} = await this.found(id, authority)
    const running = this.running.get(id)
    if (!running) {
      if (!response.background) throw this.api.errors.badRequest(`response ${id} was not created with background true; only background responses can be cancelled.`, 'response_id')
      return response
    }

    running.controller.abort()
    await running.finished
    return running.record.response
  }

  async delete(id: string, authority: Authority): Promise<void> {
    await this.found(id, authority)
    const running = this.running.get(id)
    if (running) {
      running.controller.abort()
      await running.finished
    }

    await this.store.delete(id)
  }
}

const ID_PARAM = 'resp_0123456789abcdef01234567'

export function storedResponseRoutes(api: KernelApi, library: ResponseLibrary, shapes: ReturnType<typeof responsesSchemas>): RouteDefinition[] {
  const s = api.schema
  const common = {example: {params: {response_id: ID_PARAM}}, permission: 'models:read', tag: 'LLM'}
  return [
    {
      ...common,
      async handler({authority, params}) {
        return {body: (await library.found(params.response_id, authority)).response, kind: 'json'}
      },
      method: 'GET',
      path: '/v1/responses/:response_id',
      response: shapes.response.json,
      summary: "A stored response (the caller's own; an admin's, anyone's), or a background one as it runs",
    },
    {
      ...common,
      async handler({authority, params}) {
        await library.delete(params.response_id, authority)
        return {body: {deleted: true, id: params.response_id, object: 'response'}, kind: 'json'}
      },
      method: 'DELETE',
      path: '/v1/responses/:response_id',
      response: shapes.deleted.json,
      summary: 'Deletes a stored response, cancelling it first if it runs in the background',
    },
    {
      ...common,
      async handler({authority, params}) {
        return {body: await library.cancel(params.response_id, authority), kind: 'json'}
      },
      method: 'POST',
      path: '/v1/responses/:response_id/cancel',
      response: shapes.response.json,
      summary: 'Cancels a background response; one that has ended is answered as it is',
    },
    {
      ...common,
      async handler({authority, params, query}) {
        const limit = query.limit === undefined ? 20 : Number(query.limit)
        if (!Number.isInteger(limit) || limit < 1 || limit > 100) throw api.errors.badRequest('`limit` must be an integer from 1 to 100.', 'limit')
        const order = query.order ?? 'desc'
        if (order !== 'asc' && order !== 'desc') throw api.errors.badRequest('`order` must be asc or desc.', 'order')
        const {context} = await library.found(params.response_id, authority)
        const items = order === 'asc' ? context : [...context].reverse()
        const after = typeof query.after === 'string' ? items.findIndex((item) => item.id === query.after) : -1
        if (typeof query.after === 'string' && after < 0) throw api.errors.badRequest(`\`after\` "${query.after}" is not an item of response ${params.response_id}.`, 'after')
        const data = items.slice(after + 1, after + 1 + limit)
        return {body: {data, first_id: data[0]?.id ?? null, has_more: after + 1 + limit < items.length, last_id: data.at(-1)?.id ?? null, object: 'list'}, kind: 'json'}
      },
      example: {params: {response_id: ID_PARAM}, query: {after: 'msg_0123456789abcdef01234567', limit: 20, order: 'desc'}},
      method: 'GET',
      path: '/v1/responses/:response_id/input_items',
      query: {
        after: {description: 'An item id: the items after it in the order asked.', schema: s.string({maxLength: 128}).json},
        limit: {description: 'Items per page, 1 to 100 (20).', schema: s.integer({maximum: 100, minimum: 1}).json},
        order: {description: 'asc: oldest first; desc (the default): newest first.', schema: s.string({enum: ['asc', 'desc']}).json},
      },
      response: shapes.itemList.json,
      summary: 'The input items a stored response answered, those of the responses it continued included',
    },
  ]
}
