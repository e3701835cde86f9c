/**
 * The video routes in Xinference's shapes: `POST /v1/video/generations` (JSON: a prompt), and the uploads
 * `/v1/video/generations/image` (a picture to animate) and `/v1/video/generations/flf` (the first and last frames),
 * each with `negative_prompt`, `n`, `size`, `seed`, `steps`, `guidance_scale`, `num_frames`, `fps` and Xinference's
 * `kwargs`. They answer `{created, data: [{b64_json} | {url}]}`, MP4 videos; `url` (Xinference's default) is an address
 * this service serves the video at for an hour.
 */
import type {InputImage, KernelApi, MediaStore, RouteDefinition, RouteRequest, VideoAbility, VideoGenerationPayload, VideoOperations} from 'service-toolkit'

/** Pictures up to 50 MiB each. */
const MAX_FILE_BYTES = 50 * 1024 * 1024

function videoFields({media, schema: s}: KernelApi, form: boolean) {
  const integer = (options: {description: string; minimum: number; maximum?: number}) => media.numberField(form, {...options, integer: true})
  const number = (options: {description: string; minimum: number; maximum?: number}) => media.numberField(form, options)
  return {
    fps: s.optional(s.nullable(integer({description: 'Frames per second of the file (the model\'s default when absent).', maximum: 120, minimum: 1}))),
    guidance_scale: s.optional(s.nullable(number({description: 'How closely to follow the prompt.', maximum: 100, minimum: 0}))),
    kwargs: s.optional(s.nullable(s.union([s.string(), s.record(s.unknown())], 'a JSON object, or its text', {description: 'Further keyword arguments for the pipeline (Xinference).'}))),
    model: s.string({description: 'Uid of a running video model.', minLength: 1}),
    n: s.optional(s.nullable(integer({description: 'How many videos to make (default 1).', maximum: media.limits.videos, minimum: 1}))),
    negative_prompt: s.optional(s.nullable(s.string({description: 'What the video should not show.'}))),
    num_frames: s.optional(s.nullable(integer({description: 'Frames to make (the model\'s default when absent).', maximum: media.limits.frames, minimum: 1}))),
    prompt: s.optional(s.nullable(s.string({description: 'What the video shows.'}))),
    response_format: s.optional(s.nullable(s.string({description: 'url (default, as Xinference) or b64_json.', enum: ['b64_json', 'url']}))),
    seed: s.optional(s.nullable(integer({description: 'Makes the result reproducible.', maximum: 2 ** 32 - 1, minimum: 0}))),
    size: s.optional(s.nullable(s.string({description: 'WIDTHxHEIGHT, each side a multiple of 8; the model\'s default (or the picture\'s size) when absent.'}))),
    steps: s.optional(s.nullable(integer({description: 'Denoising steps (num_inference_steps).', maximum: media.limits.steps, minimum: 1}))),
  }
}

type Fields = {[K in keyof ReturnType<typeof videoFields>]?: unknown} & {model: string}

export function videoRoutes(api: KernelApi, store: MediaStore): RouteDefinition[] {
  const s = api.schema

  /** `framesOf` reads the uploaded frames, once the model is known to take them: an upload is not read for a request refused anyway. */
  async function generate(request: RouteRequest<Fields>, task: VideoAbility, framesOf: () => Promise<{image?: InputImage; last_frame?: InputImage}> = async () => ({})) {
    const {body, headers, models, signal} = request
    const model = models.get<VideoOperations>(body.model)
    const what = {firstlastframe2video: 'make videos between a first and a last frame', image2video: 'animate pictures', text2video: 'make videos from text'}[task]
    api.requireAbility(model, task, what)
    const frames = await framesOf()
    // Asked for, else the first frame's own in whole blocks of 8 pixels.
    const size = api.media.parseSize(body.size as string | undefined) ?? (frames.image ? api.media.sizeOfPicture(frames.image) : undefined)
    const payload: VideoGenerationPayload = {
      fps: (body.fps as number | null) ?? undefined,
      guidance_scale: (body.guidance_scale as number | null) ?? undefined,
      height: size?.height,
      kwargs: api.media.parseKwargs(body.kwargs),
      n: (body.n as number | null) ?? 1,
      negative_prompt: (body.negative_prompt as string | null) ?? undefined,
      num_frames: (body.num_frames as number | null) ?? undefined,
      prompt: (body.prompt as string | null) ?? '',
      seed: (body.seed as number | null) ?? undefined,
      steps: (body.steps as number | null) ?? undefined,
      task,
      width: size?.width,
      ...frames,
    }
    const videos: Array<{data: string; mediaType: string}> = []
    for await (const event of model.invoke('generate_video', payload, signal)) if (event.type === 'video') videos[event.index] = event
    const asUrl = (body.response_format ?? 'url') === 'url'
    const data = videos.map(({data: bytes, mediaType}) =>
      asUrl ? {url: api.media.fileUrl(headers, `/v1/video/files/${store.put(Buffer.from(bytes, 'base64'), mediaType, mediaType === 'video/mp4' ? 'mp4' : 'bin')}`)} : {b64_json: bytes},
    )
    return {body: {created: Math.floor(Date.now() / 1000), data}, kind: 'json' as const}
  }

  const picture = async (request: RouteRequest<Fields>, field: string) => (await api.media.uploadedImages(request.files[field], field))[0]
  return [
    {
      body: s.object({...videoFields(api, false), prompt: s.string({description: 'What the video shows.', minLength: 1})}, {title: 'TextToVideoRequest'}) as never,
      example: {body: {model: 'tiny-random-video', num_frames: 5, prompt: 'A boat on a lake', size: '64x64', steps: 2}},
      handler: (request: RouteRequest<Fields>) => generate(request, 'text2video'),
      method: 'POST',
      path: '/v1/video/generations',
      permission: 'models:read',
      summary: 'Make videos from a prompt (Xinference)',
      tag: 'video',
    },
    {
      body: s.object(videoFields(api, true), {title: 'ImageToVideoRequest'}) as never,
      example: {body: {model: 'Wan2.2-ti2v-5B', num_frames: 5, prompt: 'The boat sails away', steps: 2}},
      handler: (request: RouteRequest<Fields>) => generate(request, 'image2video', async () => ({image: await picture(request, 'image')})),
      method: 'POST',
      multipart: {files: {image: {description: 'The picture to animate (PNG, JPEG or WebP).', required: true}}, maxFileBytes: MAX_FILE_BYTES},
      path: '/v1/video/generations/image',
      permission: 'models:read',
      summary: 'Animate a picture into videos (Xinference)',
      tag: 'video',
    },
    {
      body: s.object(videoFields(api, true), {title: 'FirstLastFrameToVideoRequest'}) as never,
      example: {body: {model: 'Wan2.1-flf2v-14B-720p', num_frames: 5, prompt: 'Day turns to night', steps: 2}},
      handler: (request: RouteRequest<Fields>) =>
        generate(request, 'firstlastframe2video', async () => {
          const first = await picture(request, 'first_frame')
          const last = await picture(request, 'last_frame')
          if (first.width !== last.width || first.height !== last.height)
            throw api.errors.badRequest(`\`last_frame\` is ${last.width}x${last.height} but first_frame is ${first.width}x${first.height}; both frames must be the same size.`, 'last_frame')
          return {image: first, last_frame: last}
        }),
      method: 'POST',
      multipart: {files: {first_frame: {description: 'The first frame.', required: true}, last_frame: {description: 'The last frame, the size of the first.', required: true}}, maxFileBytes: MAX_FILE_BYTES},
      path: '/v1/video/generations/flf',
      permission: 'models:read',
      summary: 'Make videos from a first and a last frame (Xinference)',
      tag: 'video',
    },
  ] as RouteDefinition[]
}
