/**
 * Runs a generation on a model and answers in OpenAI's images shape: `{created, data: [{b64_json} | {url}]}`, or with
 * `stream`, server-sent events: `image_generation.progress` for each step done (`step`, `steps`), then one
 * `image_generation.completed` per image, with the fields OpenAI's event requires. The request's signal reaches the engine, so a client that goes away stops
 * the generation at its next step.
 */
import type {ImageGenerationPayload, ImageOperations, KernelApi, MediaStore, ModelHandle, RouteRequest, RouteResult} from 'service-toolkit'

export type ResponseFormat = 'b64_json' | 'url'

export interface Delivery {
  responseFormat: ResponseFormat
  stream: boolean
  /** `image_generation` or `image_edit`: how the stream's events are named. */
  eventPrefix: string
  /** The request's `background` and `quality`, which a completed event repeats. */
  background?: string
  quality?: string
}

/** The values OpenAI's completed events allow; its types (and so its SDKs') are enums. */
const EVENT_SIZES = new Set(['1024x1024', '1024x1536', '1536x1024'])
const EVENT_QUALITIES = new Set(['low', 'medium', 'high', 'auto'])

/** A PNG's WIDTHxHEIGHT, from its IHDR chunk, which follows the 8-byte signature and the chunk's length and type. */
function sizeOfPng(png: Buffer): string {
  return `${png.readUInt32BE(16)}x${png.readUInt32BE(20)}`
}

/**
 * The fields OpenAI's `*.completed` event requires beyond the image. A size outside its enum is `auto` (the event's
 * type allows only its own sizes); the engines count no tokens, so `usage` is zeros.
 */
function completedFields(png: string, background: string | undefined, quality: string | undefined) {
  const size = sizeOfPng(Buffer.from(png.slice(0, 44), 'base64'))
  return {
    background: background === 'opaque' ? 'opaque' : 'auto',
    quality: quality && EVENT_QUALITIES.has(quality) ? quality : 'auto',
    size: EVENT_SIZES.has(size) ? size : 'auto',
    usage: {input_tokens: 0, input_tokens_details: {image_tokens: 0, text_tokens: 0}, output_tokens: 0, total_tokens: 0},
  }
}

export function answerImages(
  api: KernelApi,
  request: RouteRequest<unknown>,
  store: MediaStore,
  model: ModelHandle<ImageOperations>,
  payload: ImageGenerationPayload,
  {background, eventPrefix, quality, responseFormat, stream}: Delivery,
): Promise<RouteResult> | RouteResult {
  const created = Math.floor(Date.now() / 1000)
  const deliver = (png: string) => {
    if (responseFormat === 'b64_json') return {b64_json: png}
    const id = store.put(Buffer.from(png, 'base64'), 'image/png', 'png')
    return {url: api.media.fileUrl(request.headers, `/v1/images/files/${id}`)}
  }

  const events = model.invoke('generate_image', {...payload, progress: stream}, request.signal)
  if (stream) {
    return started(events).then((started) => ({
      events: (async function* () {
        for await (const event of started) {
          if (event.type === 'progress') yield {data: {created_at: created, step: event.step, steps: event.steps, type: `${eventPrefix}.progress`}, event: `${eventPrefix}.progress`}
          else {
            // OpenAI's event requires b64_json, so a url answer carries both.
            const image = responseFormat === 'url' ? {b64_json: event.png, ...deliver(event.png)} : deliver(event.png)
            const data = {created_at: created, index: event.index, output_format: 'png', type: `${eventPrefix}.completed`, ...completedFields(event.png, background, quality), ...image}
            yield {data, event: `${eventPrefix}.completed`}
          }
        }
      })(),
      kind: 'sse' as const,
    }))
  }

  return (async (): Promise<RouteResult> => {
    const images: string[] = []
    for await (const event of events) if (event.type === 'image') images[event.index] = event.png
    return {body: {created, data: images.map(deliver), output_format: 'png'}, kind: 'json'}
  })()
}

/**
 * The events, once the first has come. An engine refuses a request (a size or a number of steps it cannot make) before
 * its first step, so waiting for that step lets the refusal be the HTTP answer, a 400 as without `stream`, instead of
 * an error event in a 200 stream that OpenAI's clients read without a status. Progress comes after each step, so the
 * head goes out with the first of them.
 */
async function started<T>(events: AsyncIterable<T>): Promise<AsyncIterable<T>> {
  const iterator = events[Symbol.asyncIterator]()
  const first = await iterator.next()
  return {
    async *[Symbol.asyncIterator]() {
      try {
        if (first.done) return
        yield first.value
        while (true) {
          const next = await iterator.next()
          if (next.done) return
          yield next.value
        }
      } finally {
        // A client that went away mid-stream stops the engine's work.
        await iterator.return?.()
      }
    },
  }
}

/** The running model a request names, checked to have the ability the route needs. */
export function imageModel(api: KernelApi, request: RouteRequest<unknown>, uid: string | undefined, ability: string, what: string): ModelHandle<ImageOperations> {
  if (uid) {
    const model = request.models.get<ImageOperations>(uid)
    api.requireAbility(model, ability, what)
    return model
  }

  // Xinference's edits route takes the first model that can do the job when the request names none.
  const found = request.models.list().find((model) => model.modelType === 'image' && model.abilities.includes(ability))
  if (!found) throw api.errors.badRequest(`\`model\` is required: no running image model can ${what}; launch one with the ${ability} ability.`, 'model')
  return request.models.get<ImageOperations>(found.uid)
}
