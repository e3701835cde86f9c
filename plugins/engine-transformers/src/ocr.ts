/**
 * The engine's image models: OCR with transformers' own GOT-OCR 2.0 (GotOcr2ForConditionalGeneration and its
 * processor, the layout of stepfun-ai/GOT-OCR-2.0-hf). A launch is refused when the model cannot be read this way:
 * before anything is downloaded, a family that does not read text or a repository known to need its own Python code
 * (stepfun-ai/GOT-OCR2_0, which Xinference runs with trust_remote_code); before the program starts, weights whose
 * config.json names classes of their own code. The `ocr` operation posts the picture and kwargs to python/host.py,
 * which checks the kwargs and answers the text as JSON lines while it is decoded.
 */
import type {ErrorFactory, ExternalOperations, ImageOperations, JsonLinesCall, LoadRequest} from 'service-toolkit'

import {readFile, stat} from 'node:fs/promises'
import {dirname, join} from 'node:path'

/** What the image type's model can do on this engine. */
export const OCR_ABILITIES = ['ocr']

/** Hub repositories whose weights need their own Python code, and the transformers-native conversion of each. */
const NATIVE_CONVERSIONS: Record<string, string> = {'stepfun-ai/GOT-OCR2_0': 'GOT-OCR-2.0-hf (stepfun-ai/GOT-OCR-2.0-hf)'}

const remoteCodeRefusal = (modelName: string, needs: string, native: string | undefined, errors: ErrorFactory) =>
  errors.badRequest(
    `${modelName}'s weights need their repository's own Python code (${needs}), which runs only where that code is trusted (Xinference's runner for it, with trust_remote_code); ` +
      `the transformers engine reads text with transformers' own OCR models: launch ${native ?? 'a transformers-native conversion of it'} instead.`,
    'model_name',
  )

/** The `auto_map` of the model folder's config.json: classes from the repository's own code, when it names any. */
async function remoteCode(modelPath: string): Promise<string[]> {
  const folder = (await stat(modelPath)).isFile() ? dirname(modelPath) : modelPath
  const text = await readFile(join(folder, 'config.json'), 'utf8').catch(() => '{}')
  const autoMap = (JSON.parse(text) as {auto_map?: Record<string, string>}).auto_map
  return Object.values(autoMap ?? {})
}

/** Throws, before anything is downloaded, the reason an image model cannot run on this engine, as far as its launch says. */
export function checkImageLaunch({family, modelName, spec}: Omit<LoadRequest, 'modelPath'>, errors: ErrorFactory): void {
  const abilities = (family.model_ability as string[] | undefined) ?? []
  if (!abilities.includes('ocr'))
    throw errors.badRequest(`${modelName} is an image model for ${abilities.join(', ') || 'text2image'}; the transformers engine runs image models that read text (ocr): launch it with the diffusers engine.`, 'model_engine')
  const native = spec.model_id ? NATIVE_CONVERSIONS[spec.model_id] : undefined
  if (native) throw remoteCodeRefusal(modelName, spec.model_id!, native, errors)
}

/** Throws the reason downloaded weights cannot run on this engine: classes of their repository's own code. */
export async function checkImageModel({modelName, modelPath, spec}: LoadRequest, errors: ErrorFactory): Promise<void> {
  const classes = await remoteCode(modelPath)
  if (classes.length > 0) throw remoteCodeRefusal(modelName, `config.json's auto_map: ${classes.join(', ')}`, spec.model_id ? NATIVE_CONVERSIONS[spec.model_id] : undefined, errors)
}

export const ocrOperations = (call: JsonLinesCall): Partial<ExternalOperations<ImageOperations>> => ({
  ocr: (payload, endpoint) => call('/v1/images/ocr', payload, endpoint),
})
