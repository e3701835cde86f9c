/**
 * The `image` and `video` model types' operations. Pictures cross the process boundary as base64 (a model may
 * run on another machine, reached over HTTP), already checked by the route: an input image is known to be one, of
 * the size it says. Generation reports each denoising step as it is done, so a client can show progress, and stops
 * at the next step when its signal is aborted.
 */
import type {OperationSpec} from './operations.js'

export type ImageAbility = 'image2image' | 'inpainting' | 'ocr' | 'text2image'

/** An image a client sent, as the route read it. */
export interface InputImage {
  /** The file's bytes, base64. */
  data: string
  /** `image/png`, `image/jpeg`, `image/webp`, … as read from the bytes, not as the client named them. */
  mediaType: string
  width: number
  height: number
  /** The request's field it came in (`image`, `image[1]`, `mask_image`, …), which an engine names when it cannot read it. */
  field: string
}

/** The settings every generation shares, images and videos alike. */
export interface GenerationSettings {
  prompt: string
  negative_prompt?: string
  /** How many to make. */
  n: number
  width?: number
  height?: number
  /** Denoising steps (diffusers' `num_inference_steps`); the model's default when absent. */
  steps?: number
  guidance_scale?: number
  /** Makes the result reproducible; random when absent. */
  seed?: number
  /** Further keyword arguments for the pipeline, as Xinference passes `kwargs`, over the family's `default_generate_config`. */
  kwargs: Record<string, unknown>
  /**
   * Whether the engine reports each step done (its `progress` events); true when absent. Only a streamed answer
   * shows them, and on a CPU each one wakes the service while the engine computes.
   */
  progress?: boolean
}

export interface ImageGenerationPayload extends GenerationSettings {
  task: Exclude<ImageAbility, 'ocr'>
  /** The image(s) to start from (image2image, inpainting). */
  images?: InputImage[]
  /** Where inpainting repaints: white, or transparent (as OpenAI's edit masks mark it); the size of the image. */
  mask?: InputImage
}

/** A step done of `steps` (for all `n` images together), then each image as it is ready. */
export type ImageGenerationEvent = {type: 'progress'; step: number; steps: number} | {type: 'image'; index: number; png: string}

export interface OcrPayload {
  image: InputImage
  kwargs: Record<string, unknown>
}

export interface OcrEvent {
  type: 'text'
  text: string
}

export interface ImageOperations {
  generate_image: OperationSpec<ImageGenerationPayload, ImageGenerationEvent>
  ocr: OperationSpec<OcrPayload, OcrEvent>
}

export type VideoAbility = 'firstlastframe2video' | 'image2video' | 'text2video'

export interface VideoGenerationPayload extends GenerationSettings {
  task: VideoAbility
  /** image2video: the picture to animate; firstlastframe2video: the first frame. */
  image?: InputImage
  /** firstlastframe2video: the last frame. */
  last_frame?: InputImage
  num_frames?: number
  fps?: number
}

/** A step done, then each video as it is ready: its bytes, base64, and their media type (`video/mp4`). */
export type VideoGenerationEvent = {type: 'progress'; step: number; steps: number} | {type: 'video'; index: number; data: string; mediaType: string}

export interface VideoOperations {
  generate_video: OperationSpec<VideoGenerationPayload, VideoGenerationEvent>
}
