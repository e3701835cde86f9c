/** Generated tiny GGUFs registered as custom models: the fixtures end-to-end tests launch. */
import Anthropic from '@anthropic-ai/sdk'
import {writeFile} from 'node:fs/promises'
import {join} from 'node:path'
import {pathToFileURL} from 'node:url'
import OpenAI from 'openai'

import {writeRandomBertGguf} from '../../plugins/engine-llama-cpp/src/gguf/random-bert.js'
import {type RandomLlamaOptions, writeRandomLlamaGguf} from '../../plugins/engine-llama-cpp/src/gguf/random-llama.js'
import {callApi, type RunningService, startService, temporaryDirectory} from './service.js'

/** A generated llama chat model registered as an LLM; `options` shape the model (e.g. `endOfTurnLogit`). */
export async function writeTinyChatModel(
  directory: string,
  name = 'tiny-chat',
  options: RandomLlamaOptions = {},
): Promise<{ggufPath: string; registrationPath: string; family: Record<string, unknown>}> {
  const ggufPath = join(directory, `${name}.gguf`)
  await writeRandomLlamaGguf(ggufPath, options)
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

/**
 * `service-local` serving a generated chat model, registered and launched as `name` with `launch`'s options, and the
 * official OpenAI and Anthropic clients pointed at it. A service whose model did not launch is stopped.
 */
export async function serveTinyChatModel(name: string, launch: Record<string, unknown>): Promise<{service: RunningService; openai: OpenAI; anthropic: Anthropic}> {
  const {family} = await writeTinyChatModel(await temporaryDirectory(), name)
  const service = await startService()
  const registered = await callApi(service, 'POST', '/v1/model_registrations/LLM', {model: family, persist: false})
  const launched = registered.status === 200 ? await callApi(service, 'POST', '/v1/models', {model_engine: 'llama.cpp', model_name: name, ...launch}) : registered
  if (launched.status !== 200) {
    await service.stop()
    throw new Error(`${name} did not register and launch: ${JSON.stringify(launched.body)}`)
  }

  const openai = new OpenAI({apiKey: 'any', baseURL: `${service.url}/v1`, maxRetries: 0})
  const anthropic = new Anthropic({apiKey: 'any', baseURL: `${service.url}/anthropic`, maxRetries: 0})
  return {anthropic, openai, service}
}

/**
 * A generated BERT embedding model (64 dimensions, 128 positions) or cross-encoder reranker, as an embedding or
 * rerank registration in Xinference's format (no model size). `matryoshkaDimensions` lets the embedding model
 * shorten its vectors.
 */
export async function writeTinyRetrievalModel(
  directory: string,
  kind: 'embedding' | 'rerank',
  name = `tiny-${kind}`,
  {matryoshkaDimensions}: {matryoshkaDimensions?: number[]} = {},
): Promise<{ggufPath: string; registrationPath: string; family: Record<string, unknown>}> {
  const ggufPath = join(directory, `${name}.gguf`)
  const written = await writeRandomBertGguf(ggufPath, {kind: kind === 'rerank' ? 'reranker' : 'embedding'})
  const family = {
    language: ['en'],
    max_tokens: written.contextLength,
    model_name: name,
    model_specs: [{model_format: 'ggufv2', model_uri: pathToFileURL(ggufPath).href, quantization: 'f32'}],
    version: 2,
    ...(kind === 'embedding' ? {dimensions: written.embeddingLength} : {type: 'normal'}),
    ...(matryoshkaDimensions ? {matryoshka_dimensions: matryoshkaDimensions} : {}),
  }
  const registrationPath = join(directory, `${name}.json`)
  await writeFile(registrationPath, JSON.stringify(family, null, 2))
  return {family, ggufPath, registrationPath}
}
