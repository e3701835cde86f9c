// Wire types of the image and video routes; see launch.ts for why they live in src/protocol/.

/** The settings an image or video generation takes besides its prompt and pictures. */
export interface GenerationOptions {
  n?: number
  /** `WIDTHxHEIGHT`; the model's default (generation) or the picture's size (edits) when absent. */
  size?: string
  negative_prompt?: string
  seed?: number
  steps?: number
  guidance_scale?: number
  /** Further keyword arguments for the pipeline (Xinference's `kwargs`). */
  kwargs?: Record<string, unknown>
}

export interface ImageOptions extends GenerationOptions {
  /** `b64_json` (default) or `url`, an address the service serves the image at for an hour. */
  response_format?: 'b64_json' | 'url'
}

/** `POST /v1/images/generations`, `/edits`, `/variations`, `/inpainting` (OpenAI's shape): PNG images. */
export interface ImagesResponse {
  created: number
  data: Array<{b64_json?: string; url?: string}>
  output_format: 'png'
}

/** `POST /v1/images/ocr`. */
export interface OcrResponse {
  text: string
}

/** `POST /v1/video/generations`, `/image`, `/flf` (Xinference's shape): MP4 videos. */
export interface VideosResponse {
  created: number
  data: Array<{b64_json?: string; url?: string}>
}

export interface VideoOptions extends GenerationOptions {
  response_format?: 'b64_json' | 'url'
  num_frames?: number
  fps?: number
}

/** The options as multipart form fields: text, with `kwargs` as JSON. */
export function formFields(form: FormData, options: Record<string, unknown>): FormData {
  for (const [name, value] of Object.entries(options)) {
    if (value === undefined || value === null) continue
    form.append(name, typeof value === 'object' ? JSON.stringify(value) : String(value))
  }

  return form
}
