/**
 * Pictures in chat requests: OpenAI's `image_url` parts and Anthropic's `image` blocks become image slots of their
 * turn's parts while the request is checked, and are read (api.images: bounds, address checks, file types) only once
 * the model is known to see and its engine to take them, so a refused request fetches nothing.
 */
import type {ChatImage, ChatPart, ImageSource, KernelApi, ModelHandle} from 'service-toolkit'

/** Base64 of the largest picture the service reads (8 MiB, see the kernel's image-inputs.ts), which bounds the fields that carry one. */
export const IMAGE_BASE64_CHARACTERS = Math.ceil((8 * 1024 * 1024) / 3) * 4

/** A picture's place in its turn, filled when the picture is read. */
export interface ImageSlot {
  source: ImageSource
  part: {type: 'image'; image: ChatImage}
}

/**
 * The engines whose programs take pictures with a chat (transformers' host with the model's processor; vLLM and SGLang
 * in OpenAI's format); llama.cpp (node-llama-cpp has no multimodal projector support) and mlx_lm's server do not.
 */
const ENGINES_THAT_SEE = ['transformers', 'vllm', 'sglang']
const ENGINE_NAMES = 'transformers, vLLM or SGLang'

export function imageSlot(source: ImageSource, slots: ImageSlot[]): ChatPart {
  const slot: ImageSlot = {part: {image: {data: '', mediaType: ''}, type: 'image'}, source}
  slots.push(slot)
  return slot.part
}

/** A turn's text, with its parts when it shows pictures: text pieces are joined with a line break, as vLLM joins them. */
export function turnContent(parts: ChatPart[]): {content: string; parts?: ChatPart[]} {
  const content = parts.flatMap((part) => (part.type === 'text' ? [part.text] : [])).join('\n')
  return parts.some((part) => part.type === 'image') ? {content, parts} : {content}
}

/** Checks that the model may see the request's pictures, then reads them into their slots. */
export async function readImages(api: KernelApi, model: Omit<ModelHandle, 'invoke'>, slots: ImageSlot[], signal: AbortSignal): Promise<void> {
  if (slots.length === 0) return
  const {field} = slots[0].source
  if (!model.abilities.includes('vision'))
    throw api.errors.badRequest(
      `\`${field}\` is a picture, and model ${model.uid} (${model.modelName}) cannot see images: it has no vision ability; send text only, or launch a model whose abilities include vision.`,
      field,
    )
  const engine = String(model.description.model_engine ?? '')
  if (!ENGINES_THAT_SEE.includes(engine.toLowerCase()))
    throw api.errors.badRequest(
      `\`${field}\` is a picture, and model ${model.uid} runs on the ${engine} engine, which cannot take images; launch it on an engine that can: ${ENGINE_NAMES}.`,
      field,
    )
  const images = await api.images.read(
    slots.map((slot) => slot.source),
    signal,
  )
  for (const [index, image] of images.entries()) slots[index].part.image = image
}

/** Anthropic's `image` block, `{"source": {"type": "base64", "media_type", "data"}}` or `{"type": "url", "url"}`, as a slot. */
export function anthropicImage(api: KernelApi, block: {source?: {data?: string; media_type?: string; type: string; url?: string}}, at: string, role: string, slots: ImageSlot[]): ChatPart {
  if (role !== 'user') throw api.errors.badRequest(`\`${at}\`: image blocks belong in user messages.`, at)
  const {source} = block
  if (!source) throw api.errors.badRequest(`\`${at}.source\` is required in an image block: {"type": "base64", "media_type": …, "data": …} or {"type": "url", "url": …}.`, `${at}.source`)
  if (source.type === 'url') {
    if (!source.url) throw api.errors.badRequest(`\`${at}.source.url\` is required in a url source.`, `${at}.source.url`)
    return imageSlot({field: `${at}.source.url`, url: source.url}, slots)
  }

  if (!source.data || !source.media_type)
    throw api.errors.badRequest(`\`${at}.source\` of type base64 needs media_type (image/png, image/jpeg, image/webp or image/gif) and data.`, `${at}.source`)
  return imageSlot({data: source.data, field: `${at}.source.data`, mediaType: source.media_type}, slots)
}
