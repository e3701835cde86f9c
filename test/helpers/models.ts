/** A generated tiny GGUF registered as a custom LLM, the fixture most end-to-end tests launch. */
import {writeFile} from 'node:fs/promises'
import {join} from 'node:path'
import {pathToFileURL} from 'node:url'

import {writeTestLlamaGguf} from './gguf/models.js'

export async function writeTinyChatModel(directory: string, name = 'tiny-chat'): Promise<{ggufPath: string; registrationPath: string; family: Record<string, unknown>}> {
  const ggufPath = join(directory, `${name}.gguf`)
  await writeTestLlamaGguf(ggufPath)
  const family = {
    context_length: 2048,
    model_ability: ['chat', 'generate'],
    model_description: 'A generated test model with random weights',
    model_lang: ['en'],
    model_name: name,
    model_specs: [{model_format: 'ggufv2', model_size_in_billions: '0_5', model_uri: pathToFileURL(ggufPath).href, quantization: 'q4_0'}],
    version: 2,
  }
  const registrationPath = join(directory, `${name}.json`)
  await writeFile(registrationPath, JSON.stringify(family, null, 2))
  return {family, ggufPath, registrationPath}
}
