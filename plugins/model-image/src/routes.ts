/**
 * The image routes: `POST /v1/images/generations` (JSON, OpenAI's shape plus `negative_prompt`, `seed`, `steps`,
 * `guidance_scale` and Xinference's `kwargs`), and the uploads: `/v1/images/edits` (OpenAI's edit: images and an
 * optional mask), `/v1/images/variations`, `/v1/images/inpainting` (Xinference's: `image` and `mask_image`) and
 * `/v1/images/ocr`. Everything a request says is checked here, before a model is asked.
 */
import type {ImageGenerationPayload, InputImage, KernelApi, MediaStore, OcrPayload, RouteDefinition, RouteRequest, UploadedFiles} from 'service-toolkit'

import {answerImages, imageModel, type ResponseFormat} from './results.js'

/** Each server-sent event of a generation asked to `stream` (results.ts): a step done, then each image. */
const STREAM_EVENT = {
  description:
    '`<kind>.progress` after each step (`step` of `steps`), then `<kind>.completed` for each image, with `b64_json` (and `url` when asked) and OpenAI\'s `size` (auto for a size outside its enum), `quality`, `background` and `usage` (zeros: the engines count no tokens); `<kind>` is image_generation, image_edit, image_variation or image_inpainting.',
  properties: {
    b64_json: {type: 'string'},
    background: {enum: ['opaque', 'auto'], type: 'string'},
    created_at: {type: 'integer'},
    index: {type: 'integer'},
    output_format: {enum: ['png'], type: 'string'},
    quality: {enum: ['low', 'medium', 'high', 'auto'], type: 'string'},
    size: {enum: ['1024x1024', '1024x1536', '1536x1024', 'auto'], type: 'string'},
    step: {type: 'integer'},
    steps: {type: 'integer'},
    type: {type: 'string'},
    url: {type: 'string'},
    usage: {
      properties: {
        input_tokens: {type: 'integer'},
        input_tokens_details: {properties: {image_tokens: {type: 'integer'}, text_tokens: {type: 'integer'}}, required: ['text_tokens', 'image_tokens'], type: 'object'},
        output_tokens: {type: 'integer'},
        total_tokens: {type: 'integer'},
      },
      required: ['total_tokens', 'input_tokens', 'output_tokens', 'input_tokens_details'],
      type: 'object',
    },
  },
  required: ['created_at', 'type'],
  type: 'object',
}

/** Uploads of up to 50 MiB each, as OpenAI takes for its image models. */
const MAX_FILE_BYTES = 50 * 1024 * 1024

/** The fields every generation route takes; `form`: the body is multipart, whose fields are all text. */
function generationFields({media, schema: s}: KernelApi, form: boolean) {
  const integer = (options: {description: string; minimum: number; maximum?: number}) => media.numberField(form, {...options, integer: true})
  const number = (options: {description: string; minimum: number; maximum?: number}) => media.numberField(form, options)
  return {
    background: s.optional(s.nullable(s.string({description: 'auto (default) or opaque: the images are opaque PNGs; transparent is not supported.', enum: ['transparent', 'opaque', 'auto']}))),
    guidance_scale: s.optional(s.nullable(number({description: 'How closely to follow the prompt (classifier-free guidance); the model\'s default when absent.', maximum: 100, minimum: 0}))),
    kwargs: s.optional(s.nullable(s.union([s.string(), s.record(s.unknown())], 'a JSON object, or its text', {description: 'Further keyword arguments for the pipeline (Xinference).'}))),
    model: s.optional(s.string({description: 'Uid of a running image model.', minLength: 1})),
    moderation: s.optional(s.nullable(s.string({description: 'Accepted for OpenAI clients and ignored: no content filter runs here.', enum: ['low', 'auto']}))),
    n: s.optional(s.nullable(integer({description: 'How many images to make (default 1).', maximum: media.limits.images, minimum: 1}))),
    negative_prompt: s.optional(s.nullable(s.string({description: 'What the image should not show.'}))),
    output_compression: s.optional(s.nullable(integer({description: 'Compression of webp and jpeg images (0-100); images here are PNG, which it does not apply to, so it is accepted and changes nothing.', maximum: 100, minimum: 0}))),
    output_format: s.optional(s.nullable(s.string({description: 'Only png is made.', enum: ['png']}))),
    partial_images: s.optional(s.nullable(integer({description: 'Partial images to stream: only 0 (the default) is supported; `stream` sends progress after each step instead.', maximum: 3, minimum: 0}))),
    quality: s.optional(s.nullable(s.string({description: 'Accepted for OpenAI clients; steps set the quality here.'}))),
    response_format: s.optional(s.nullable(s.string({description: 'b64_json (default) or url: an address this service serves the image at for an hour.', enum: ['b64_json', 'url']}))),
    seed: s.optional(s.nullable(integer({description: 'Makes the result reproducible.', maximum: 2 ** 32 - 1, minimum: 0}))),
    size: s.optional(s.nullable(s.string({description: 'WIDTHxHEIGHT (or Xinference\'s WIDTH*HEIGHT), each side a multiple of 8; auto: the model\'s default.'}))),
    steps: s.optional(s.nullable(integer({description: 'Denoising steps (num_inference_steps); the model\'s default when absent.', maximum: media.limits.steps, minimum: 1}))),
    stream: s.optional(s.nullable(form ? media.formBoolean('Send progress (each step done) and the images as server-sent events.') : s.boolean({description: 'Send progress (each step done) and the images as server-sent events.'}))),
    style: s.optional(s.nullable(s.string({description: 'Accepted for OpenAI clients and ignored.'}))),
    user: s.optional(s.nullable(s.string({description: 'Accepted for OpenAI clients and ignored.'}))),
  }
}

type Fields = {[K in keyof ReturnType<typeof generationFields>]?: unknown} & {prompt?: string | null}

function settingsOf(api: KernelApi, body: Fields) {
  // OpenAI's values the engines cannot honour are refused rather than ignored, so a client does not get what it did not ask for.
  if (body.background === 'transparent')
    throw api.errors.badRequest('`background` transparent is not supported: the image models here make opaque pictures; send opaque or auto.', 'background')
  if (typeof body.partial_images === 'number' && body.partial_images > 0)
    throw api.errors.badRequest(`\`partial_images\` ${body.partial_images} is not supported: the image models here send no partial images; send 0 (\`stream\` sends progress after each step).`, 'partial_images')
  const size = api.media.parseSize(body.size as string | undefined)
  return {
    guidance_scale: (body.guidance_scale as number | null) ?? undefined,
    height: size?.height,
    kwargs: api.media.parseKwargs(body.kwargs),
    n: (body.n as number | null) ?? 1,
    negative_prompt: (body.negative_prompt as string | null) ?? undefined,
    prompt: body.prompt ?? '',
    seed: (body.seed as number | null) ?? undefined,
    steps: (body.steps as number | null) ?? undefined,
    width: size?.width,
  }
}

const deliveryOf = (body: Fields, eventPrefix: string) => ({
  background: (body.background as string | null) ?? undefined,
  eventPrefix,
  quality: (body.quality as string | null) ?? undefined,
  responseFormat: ((body.response_format as string | null) ?? 'b64_json') as ResponseFormat,
  stream: body.stream === true,
})

function sameSize(api: KernelApi, image: InputImage, mask: InputImage, field: string) {
  if (image.width !== mask.width || image.height !== mask.height)
    throw api.errors.badRequest(`\`${field}\` is ${mask.width}x${mask.height} but the image is ${image.width}x${image.height}; the mask must be the size of the image.`, field)
}

/** The one picture an edit or a variation starts from: the image engines take one a request. */
async function pictureOf(api: KernelApi, files: UploadedFiles): Promise<InputImage> {
  // `images` and `images[]`: Xinference's image_edit() names its pictures so since Xinference 2.
  const fields = ['image', 'image[]', 'images', 'images[]'].filter((field) => (files[field]?.length ?? 0) > 0)
  const images = (await Promise.all(fields.map((field) => api.media.uploadedImages(files[field], field)))).flat()
  if (images.length === 0) throw api.errors.badRequest('`image` is required: send the picture as a multipart/form-data part named image.', 'image')
  if (images.length > 1)
    throw api.errors.badRequest(`${images.length} pictures were sent; the image models here start from one picture a request: send one image.`, fields.at(-1) ?? 'image')
  return images[0]
}

/** The size asked for, else the picture's own in whole blocks of 8 pixels (a 513x513 picture makes 512x512). */
const sizeFor = (api: KernelApi, settings: {width?: number; height?: number}, picture: InputImage) =>
  settings.width && settings.height ? {height: settings.height, width: settings.width} : api.media.sizeOfPicture(picture)

export function imageRoutes(api: KernelApi, store: MediaStore): RouteDefinition[] {
  const s = api.schema
  const prompt = s.string({description: 'What to draw.', minLength: 1})
  const generations: RouteDefinition<Fields> = {
    body: s.object({...generationFields(api, false), prompt}, {title: 'CreateImageRequest'}) as never,
    events: STREAM_EVENT,
    example: {body: {model: 'tiny-random-image', n: 1, prompt: 'A red apple on a table', size: '64x64', steps: 2}},
    async handler(request) {
      const {body} = request
      const model = imageModel(api, request as RouteRequest<unknown>, body.model as string | undefined, 'text2image', 'make images from text')
      const payload: ImageGenerationPayload = {...settingsOf(api, body), task: 'text2image'}
      return answerImages(api, request as RouteRequest<unknown>, store, model, payload, deliveryOf(body, 'image_generation'))
    },
    method: 'POST',
    path: '/v1/images/generations',
    permission: 'models:read',
    summary: 'Make images from a prompt (OpenAI\'s images API, with negative_prompt, seed, steps and guidance_scale)',
    tag: 'images',
  }

  const edits: RouteDefinition<Fields> = {
    body: s.object(
      {...generationFields(api, true), input_fidelity: s.optional(s.nullable(s.string({description: 'Accepted for OpenAI clients and ignored: how closely the edit keeps the picture is up to the model and `guidance_scale`.', enum: ['high', 'low']}))), prompt},
      {title: 'CreateImageEditRequest'},
    ) as never,
    events: STREAM_EVENT,
    example: {body: {model: 'tiny-random-image', prompt: 'Make it blue', steps: 2}},
    async handler(request) {
      const {body, files} = request
      // The model is checked before the uploads are read: a refused request costs no decoding.
      const masked = (files.mask?.length ?? 0) > 0
      const task = masked ? 'inpainting' : 'image2image'
      const model = imageModel(api, request as RouteRequest<unknown>, body.model as string | undefined, task, masked ? 'repaint masked parts of images' : 'edit images')
      const picture = await pictureOf(api, files)
      const [mask] = await api.media.uploadedImages(files.mask, 'mask')
      if (mask) sameSize(api, picture, mask, 'mask')
      const settings = settingsOf(api, body)
      const payload: ImageGenerationPayload = {...settings, ...sizeFor(api, settings, picture), images: [picture], mask, task}
      return answerImages(api, request as RouteRequest<unknown>, store, model, payload, deliveryOf(body, 'image_edit'))
    },
    method: 'POST',
    multipart: {
      files: {
        image: {description: 'The picture to edit (PNG, JPEG or WebP).'},
        'image[]': {description: 'Pictures to edit, as OpenAI\'s clients send several.'},
        images: {description: 'The picture to edit, as Xinference\'s image_edit() names it.'},
        'images[]': {description: 'Pictures to edit, as Xinference\'s image_edit() sends several.'},
        mask: {description: 'White where the picture is repainted; the size of the picture.'},
      },
      maxFileBytes: MAX_FILE_BYTES,
    },
    path: '/v1/images/edits',
    permission: 'models:read',
    summary: 'Edit an image from a prompt, or repaint the parts a mask marks (OpenAI\'s image edit)',
    tag: 'images',
  }

  const variations: RouteDefinition<Fields> = {
    body: s.object({...generationFields(api, true), prompt: s.optional(s.nullable(s.string({description: 'What the variations should show (optional).'})))}, {title: 'CreateImageVariationRequest'}) as never,
    events: STREAM_EVENT,
    example: {body: {model: 'tiny-random-image', steps: 2}},
    async handler(request) {
      const {body, files} = request
      const model = imageModel(api, request as RouteRequest<unknown>, body.model as string | undefined, 'image2image', 'make variations of images')
      const picture = await pictureOf(api, files)
      const settings = settingsOf(api, body)
      const payload: ImageGenerationPayload = {...settings, ...sizeFor(api, settings, picture), images: [picture], task: 'image2image'}
      return answerImages(api, request as RouteRequest<unknown>, store, model, payload, deliveryOf(body, 'image_variation'))
    },
    method: 'POST',
    multipart: {files: {image: {description: 'The picture to vary.'}, 'image[]': {description: 'Pictures to vary.'}}, maxFileBytes: MAX_FILE_BYTES},
    path: '/v1/images/variations',
    permission: 'models:read',
    summary: 'Make variations of an image (OpenAI\'s and Xinference\'s image variations)',
    tag: 'images',
  }

  const inpainting: RouteDefinition<Fields> = {
    body: s.object({...generationFields(api, true), prompt}, {title: 'ImageInpaintingRequest'}) as never,
    events: STREAM_EVENT,
    example: {body: {model: 'tiny-random-image', prompt: 'A blue sky', steps: 2}},
    async handler(request) {
      const {body, files} = request
      const model = imageModel(api, request as RouteRequest<unknown>, body.model as string | undefined, 'inpainting', 'repaint masked parts of images')
      const [image] = await api.media.uploadedImages(files.image, 'image')
      const [mask] = await api.media.uploadedImages(files.mask_image, 'mask_image')
      sameSize(api, image, mask, 'mask_image')
      const settings = settingsOf(api, body)
      const payload: ImageGenerationPayload = {...settings, ...sizeFor(api, settings, image), images: [image], mask, task: 'inpainting'}
      return answerImages(api, request as RouteRequest<unknown>, store, model, payload, deliveryOf(body, 'image_inpainting'))
    },
    method: 'POST',
    multipart: {files: {image: {description: 'The picture to repaint.', required: true}, mask_image: {description: 'White where the picture is repainted; the size of the picture.', required: true}}, maxFileBytes: MAX_FILE_BYTES},
    path: '/v1/images/inpainting',
    permission: 'models:read',
    summary: 'Repaint the parts of an image a mask marks, from a prompt (Xinference)',
    tag: 'images',
  }

  const ocrBody = s.object(
    {
      kwargs: s.optional(s.nullable(s.union([s.string(), s.record(s.unknown())], 'a JSON object, or its text', {description: 'Further keyword arguments for the model (Xinference).'}))),
      model: s.string({description: 'Uid of a running OCR model.', minLength: 1}),
    },
    {title: 'ImageOcrRequest'},
  )
  const ocr: RouteDefinition<{model: string; kwargs?: unknown}> = {
    body: ocrBody as never,
    example: {body: {model: 'tiny-random-ocr'}},
    async handler(request) {
      const {body, files, signal} = request
      const model = imageModel(api, request as RouteRequest<unknown>, body.model, 'ocr', 'read text from images')
      const [image] = await api.media.uploadedImages(files.image, 'image')
      const payload: OcrPayload = {image, kwargs: api.media.parseKwargs(body.kwargs)}
      let text = ''
      for await (const event of model.invoke('ocr', payload, signal)) text += event.text
      return {body: {text}, kind: 'json'}
    },
    method: 'POST',
    multipart: {files: {image: {description: 'The picture to read.', required: true}}, maxFileBytes: MAX_FILE_BYTES},
    path: '/v1/images/ocr',
    permission: 'models:read',
    summary: 'Read the text in an image (Xinference)',
    tag: 'images',
  }

  return [generations, edits, variations, inpainting, ocr] as RouteDefinition[]
}
