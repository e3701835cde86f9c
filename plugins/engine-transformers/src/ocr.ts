/**
 * The engine's image models: OCR with transformers' own GOT-OCR 2.0 (GotOcr2ForConditionalGeneration and its
 * processor, the layout of stepfun-ai/GOT-OCR-2.0-hf). Before the program starts, a launch is refused when the model
 * cannot be read this way: a family that does not read text, or weights that need their repository's own Python code
 * (stepfun-ai/GOT-OCR2_0, which Xinference runs with trust_remote_code). The `ocr` operation posts the picture and
 * kwargs to python/host.py, which checks the kwargs and answers the text as JSON lines while it is decoded.
 */
import type {ErrorFactory, ExternalOperations, ImageOperations, JsonLinesCall, LoadRequest} from 'service-toolkit'

import {readFile, stat} from 'node:fs/promises'
import {dirname, join} from 'node:path'

/** What the image type's model can do on this engine. */
export const OCR_ABILITIES = ['ocr']

/** The transformers-native conversions of remote-code OCR repositories, named in a refusal. */
const NATIVE_CONVERSIONS: Record<string, string> = {'GOT-OCR2_0': 'GOT-OCR-2.0-hf (stepfun-ai/GOT-OCR-2.0-hf)'}

/** The `auto_map` of the model folder's config.json: classes from the repository's own code, when it names any. */
async function remoteCode(modelPath: string): Promise<string[]> {
  const folder = (await stat(modelPath)).isFile() ? dirname(modelPath) : modelPath
  const text = await readFile(join(folder, 'config.json'), 'utf8').catch(() => '{}')
  const autoMap = (JSON.parse(text) as {auto_map?: Record<string, string>}).auto_map
  return Object.values(autoMap ?? {})
}

/** Throws the reason an image model cannot run on this engine; nothing for one it reads text with. */
export async function checkImageModel({family, modelName, modelPath}: LoadRequest, errors: ErrorFactory): Promise<void> {
  const abilities = (family.model_ability as string[] | undefined) ?? []
  if (!abilities.includes('ocr'))
    throw errors.badRequest(`${modelName} is an image model for ${abilities.join(', ') || 'text2image'}; the transformers engine runs image models that read text (ocr): launch it with the diffusers engine.`, 'model_engine')
  const classes = await remoteCode(modelPath)
  if (classes.length > 0) {
    const native = NATIVE_CONVERSIONS[modelName]
    throw errors.badRequest(
      `${modelName}'s weights need their repository's own Python code (config.json's auto_map: ${classes.join(', ')}), which runs only where that code is trusted (Xinference's runner for it, with trust_remote_code); ` +
        `the transformers engine reads text with transformers' own OCR models: launch ${native ?? 'a transformers-native conversion of it'} instead.`,
      'model_name',
    )
  }
}

export const ocrOperations = (call: JsonLinesCall): Partial<ExternalOperations<ImageOperations>> => ({
  ocr: (payload, endpoint) => call('/v1/images/ocr', payload, endpoint),
})
