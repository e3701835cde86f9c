/**
 * The client's side of the flexible, image and video routes: a running model's calls for those types, JSON or
 * multipart (a picture to edit, a mask, the frames to animate), as Xinference's client names them.
 */
import type {ImageOptions, ImagesResponse, OcrResponse, VideoOptions, VideosResponse} from '../protocol/media.js'

import {formFields} from '../protocol/media.js'

/** What these calls need of the client: one API call whose non-2xx answer becomes a ServiceError. */
export interface ApiCaller {
  request<T>(method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<T>
}

/** A running model's flexible, image and video calls; `ModelClient` adds those of the other types. */
export class MediaModelCalls<Caller extends ApiCaller = ApiCaller> {
  constructor(
    protected readonly client: Caller,
    readonly uid: string,
  ) {}

  /**
   * Runs a flexible model (`POST /v1/flexible/infers`), as Xinference's `infer(*args, **kwargs)`: for an ONNX model,
   * its inputs in order as `args` or by name as `kwargs`. Answers the model's JSON (an ONNX model's outputs by name).
   */
  infer(args: unknown[] = [], kwargs: Record<string, unknown> = {}, signal?: AbortSignal): Promise<unknown> {
    return this.client.request('POST', '/v1/flexible/infers', {...kwargs, args, model: this.uid}, signal)
  }

  /** Images from a prompt (`POST /v1/images/generations`), as Xinference's `text_to_image`. */
  textToImage(prompt: string, options: ImageOptions = {}, signal?: AbortSignal): Promise<ImagesResponse> {
    return this.client.request('POST', '/v1/images/generations', {...options, model: this.uid, prompt}, signal)
  }

  /** A picture edited from a prompt (`POST /v1/images/edits`, uploaded), as Xinference's `image_to_image`. */
  imageToImage(image: Blob, prompt: string, options: ImageOptions = {}, signal?: AbortSignal): Promise<ImagesResponse> {
    const form = formFields(new FormData(), {...options, model: this.uid, prompt})
    form.append('image', image, 'image')
    return this.client.request('POST', '/v1/images/edits', form, signal)
  }

  /** The parts of a picture its mask marks (white) repainted from a prompt (`POST /v1/images/inpainting`). */
  inpainting(image: Blob, mask: Blob, prompt: string, options: ImageOptions = {}, signal?: AbortSignal): Promise<ImagesResponse> {
    const form = formFields(new FormData(), {...options, model: this.uid, prompt})
    form.append('image', image, 'image')
    form.append('mask_image', mask, 'mask')
    return this.client.request('POST', '/v1/images/inpainting', form, signal)
  }

  /** The text in a picture (`POST /v1/images/ocr`). */
  ocr(image: Blob, kwargs: Record<string, unknown> = {}, signal?: AbortSignal): Promise<OcrResponse> {
    const form = formFields(new FormData(), {kwargs, model: this.uid})
    form.append('image', image, 'image')
    return this.client.request('POST', '/v1/images/ocr', form, signal)
  }

  /** Videos from a prompt (`POST /v1/video/generations`), as Xinference's `text_to_video`; MP4 files. */
  textToVideo(prompt: string, options: VideoOptions = {}, signal?: AbortSignal): Promise<VideosResponse> {
    return this.client.request('POST', '/v1/video/generations', {response_format: 'b64_json', ...options, model: this.uid, prompt}, signal)
  }

  /** A picture animated (`POST /v1/video/generations/image`), as Xinference's `image_to_video`. */
  imageToVideo(image: Blob, prompt = '', options: VideoOptions = {}, signal?: AbortSignal): Promise<VideosResponse> {
    const form = formFields(new FormData(), {response_format: 'b64_json', ...options, model: this.uid, prompt})
    form.append('image', image, 'image')
    return this.client.request('POST', '/v1/video/generations/image', form, signal)
  }

  /** Videos from a first to a last frame (`POST /v1/video/generations/flf`), as Xinference's `flf_to_video`. */
  flfToVideo(firstFrame: Blob, lastFrame: Blob, prompt = '', options: VideoOptions = {}, signal?: AbortSignal): Promise<VideosResponse> {
    const form = formFields(new FormData(), {response_format: 'b64_json', ...options, model: this.uid, prompt})
    form.append('first_frame', firstFrame, 'first_frame')
    form.append('last_frame', lastFrame, 'last_frame')
    return this.client.request('POST', '/v1/video/generations/flf', form, signal)
  }
}
